#!/bin/bash
# Session 15, diagnosis 4: the T5 training step's SIGSEGV inside cuGraphLaunch (the graph
# over the memory image; diag3's stack). What the graph holds, and whether eager module
# loading changes it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-m}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD out=$OUT/d w=/tmp/w; mkdir -p $out $w
name=t5_train; . tools/capture_inputs.sh --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
timeout 150 $kc run $out/t5_train.pt.trace.json.gz "${inputs[@]}" -o $w/t5 --json > /dev/null 2> $out/v1.log; echo "v1 kc run rc=$?"
p=$w/t5/t5_train/plan.kcplan
CUDA_MODULE_LOADING=EAGER timeout 150 $kc exec $p --warmup 2 --runs 5 --no-energy -o $w/v2.json > $out/v2.log 2>&1; echo "v2 eager module loading rc=$?"
timeout 150 $kc exec $p --warmup 2 --runs 5 --no-energy --no-dataflow -o $w/v3.json > $out/v3.log 2>&1; echo "v3 no dataflow rc=$?"
python3 -c "import json; print([n for n in json.load(open('$w/v3.json'))['notes'] if 'captured graph' in n])"
for f in v1 v2; do echo "== $f"; grep -v "^/" $out/$f.log | head -4; done
rm -f $out/*.values.bin $out/*.gz
