#!/bin/bash
# Session 15, diagnosis 5: which nodes of the T5 training step's graph over the memory
# image make cuGraphLaunch fault. A temporary build (kc-diag, not committed) skips tier-1
# copies (KC_DIAG_SKIP_MEMCPY), fills (KC_DIAG_SKIP_MEMSET) or the reads bound to results
# libtorch allocated (KC_DIAG_NO_BOUND); and the isolated pass over the same image.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=kc-diag
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD out=$OUT/d w=/tmp/w; mkdir -p $out $w
name=t5_train; . tools/capture_inputs.sh --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
timeout 150 $kc run $out/t5_train.pt.trace.json.gz "${inputs[@]}" -o $w/t5 --json > /dev/null 2> $out/run.log; echo "kc run rc=$?"
p=$w/t5/t5_train/plan.kcplan
for v in KC_DIAG_SKIP_MEMCPY KC_DIAG_SKIP_MEMSET KC_DIAG_NO_BOUND; do
  env $v=1 timeout 120 $kc exec $p --warmup 2 --runs 5 --no-energy -o $w/$v.json > $out/$v.log 2>&1; echo "$v rc=$?"
  grep -h "ended by" $out/$v.log
done
timeout 200 $kc exec $p --isolated --no-energy --no-parts -o $w/iso.json > $out/iso.log 2>&1; echo "isolated over the image rc=$?"; grep -h "ended by" $out/iso.log
rm -f $out/*.values.bin $out/*.gz
