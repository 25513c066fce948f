#!/bin/bash
# Session 15, diagnosis 6: the T5 training step with kc stopping at the first step that
# faults on the device while the steps are prepared over the memory image (diag5's
# isolated pass showed a gather's device-side assertion there; graph mode went on past it
# into the capture and the driver's fault).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-n}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD out=$OUT/d w=/tmp/w; mkdir -p $out $w
name=t5_train; . tools/capture_inputs.sh --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
timeout 150 $kc run $out/t5_train.pt.trace.json.gz "${inputs[@]}" -o $w/t5 --json > /dev/null 2> $out/run.log; echo "kc run rc=$?"
grep -v "Assertion" $out/run.log | tail -4; grep -m2 "Assertion" $out/run.log
$kc plan show $w/t5/t5_train/plan.kcplan > $out/plan.txt 2>&1
rm -f $out/*.values.bin $out/*.gz
