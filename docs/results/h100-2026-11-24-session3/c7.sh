#!/bin/bash
# Issue 27 deliverable 6: `kc run` with unit energy windows of three NVML ticks (0.3 s) against 1 s windows on a ~100-unit model (T5-base shapes, 96
# units), captured in the same call: the default (graph + one isolated pass in context,
# energy) and time only.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
KC=$PWD/.device/bin/kc-new PY=/opt/torch/.venv/bin/python
R=$OUT/c7; mkdir -p $R
$PY traces/capture.py --model t5 --batch 8 --seq 256 --dtype fp32 --tf32 --name t5 --out $R > $R/capture.log 2>&1
run() { local n=$1; shift; local s=$(date +%s%N); $KC run $R/t5.pt.trace.json.gz --shapes $R/t5.et.json.gz --reference $R/reference.json -o $R/$n "$@" > $R/$n.log 2>&1; echo "rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms: kc run -o $n $*" >> $R/times.txt; }
run default --json
run window1s --unit-energy-window 1 --json
cat $R/times.txt
rm -f $R/*/*.kcir $R/*/*/*.kcir
cd $OUT && tar czf c7.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' --exclude='*.kcplan' c7 && rm -rf c7
