#!/bin/bash
# The node kinds of kc's captured graphs (Swin-T through its capture, from call 9's plan;
# the GPT-2 and Qwen2 training steps' plans of call 8), graph replay without energy.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-b.xz; chmod +x .device/bin/kc-b; KC=$PWD/.device/bin/kc-b
R=$OUT/n; mkdir -p $R
for p in .device/in/s/*.kcplan .device/in/f/gpt2_4l_train_b4s256.kcplan; do
  n=$(basename $p .kcplan)
  timeout 100 $KC exec $p --runs 100 --no-energy -o $R/$n.graph.json > $R/$n.graph.log 2>&1
  echo "$n: $(grep -o 'graph replay: .*p50 [0-9.]*' $R/$n.graph.log) | $(grep -o 'captured graph has .*' $R/$n.graph.log)" >> $R/summary.txt
done
cd $OUT && tar cJf n.txz n
