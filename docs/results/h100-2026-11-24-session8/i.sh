#!/bin/bash
# Which units' own graphs hold nodes besides kernels: Swin-T (call 9's plan) and the GPT-2
# training step (call 8's), isolated in context without energy.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-b.xz; chmod +x .device/bin/kc-b; KC=$PWD/.device/bin/kc-b
R=$OUT/i; mkdir -p $R
for p in .device/in/s/swin_t_b16_graph.kcplan .device/in/f/gpt2_4l_train_b4s256.kcplan; do
  n=$(basename $p .kcplan)
  timeout 200 $KC exec $p --isolated --cache context --no-energy -o $R/$n.isolated.json > $R/$n.isolated.log 2>&1
  echo "$n: rc=$?" >> $R/summary.txt; grep "besides its kernels" $R/$n.isolated.log >> $R/summary.txt
done
cd $OUT && tar cJf i.txz i
