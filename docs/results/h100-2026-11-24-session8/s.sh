#!/bin/bash
# Issue 24 D5: when do the training steps' images go non-finite? The plans of the Qwen2
# foreach-AdamW and GPT-2 fused-AdamW steps (bound reads, foreach first moments from zero)
# replayed 1, 3, 10 and 30 times without energy windows, then the full graph pass (100 runs,
# 3 x 1 s energy windows) with the diagnosis that now counts results read outside the image.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-b.xz; chmod +x .device/bin/kc-b; KC=$PWD/.device/bin/kc-b
R=$OUT/s; mkdir -p $R; I=.device/in/b
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
for m in qwen2 gpt2; do
  for n in 1 3 10 30; do
    timeout 100 $KC exec $I/$m.bound.kcplan --runs $n --warmup 0 --no-energy -o $R/$m.runs$n.graph.json > $R/$m.runs$n.graph.log 2>&1
    echo "$m runs $n: rc=$? $(grep -o 'non-finite values [0-9.]* %' $R/$m.runs$n.graph.log)" >> $R/summary.txt
  done
  timeout 150 $KC exec $I/$m.bound.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $R/$m.full.graph.json > $R/$m.full.graph.log 2>&1
  echo "$m full: rc=$? $(grep -o 'non-finite values [0-9.]* %' $R/$m.full.graph.log)" >> $R/summary.txt
done
cd $OUT && tar cJf s.txz --exclude="s/*kernels*.json" s
