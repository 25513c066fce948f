#!/bin/bash
# The final binary's fidelity line (steps the trace ran back to back) on two session-8 plans.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-f.xz; chmod +x .device/bin/kc-f; KC=$PWD/.device/bin/kc-f
R=$OUT/fv; mkdir -p $R
for n in gpt2_4l_train_b4s256 mixtral2l_prefill_b2s256; do
  timeout 120 $KC exec .device/in/f/$n.kcplan --runs 50 --no-energy --verify -o $R/$n.graph.json > $R/$n.graph.log 2>&1
  echo "$n rc=$?"; grep -i "step median\|steps the trace" $R/$n.graph.log
done
cd $OUT && tar cJf fv.txz fv
