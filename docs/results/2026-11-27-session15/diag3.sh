#!/bin/bash
# Session 15, diagnosis 3: the T5 training step's SIGSEGV in the graph's warm-up replays,
# with the stack kc now prints on a fatal signal.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-l}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD out=$OUT/d w=/tmp/w; mkdir -p $out $w
name=t5_train; . tools/capture_inputs.sh --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
timeout 150 $kc run $out/t5_train.pt.trace.json.gz "${inputs[@]}" -o $w/t5 --json > $w/t5.json 2> $out/t5.run.log; echo "t5 run rc=$?"
cat $out/t5.run.log
