#!/bin/bash
# The session's final binary (2528ffb): four plans built here (fixtures/modern's LLaMA
# fused-AdamW step, Qwen2 foreach-AdamW step and Mixtral MoE prefill, without values
# files; the GPT-2 fused-AdamW step with its values), graph replay with --verify and three
# 1 s energy windows: the non-finite share and the steps' medians (plain, by traced time).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-b.xz; chmod +x .device/bin/kc-b; KC=$PWD/.device/bin/kc-b
R=$OUT/f; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
for p in .device/in/f/*.kcplan; do
  n=$(basename $p .kcplan)
  timeout 120 $KC exec $p --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $R/$n.graph.json > $R/$n.graph.log 2>&1
  echo "$n: rc=$? $(grep -o 'non-finite values [0-9.]* %' $R/$n.graph.log) $(grep -o 'step median |error| .*' $R/$n.graph.log)" >> $R/summary.txt
done
cd $OUT && tar cJf f.txz --exclude="f/*kernels*.json" f
