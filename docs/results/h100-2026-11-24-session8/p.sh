#!/bin/bash
# Issue 27 on training steps whose images now stay finite: kc run (graph + isolated with
# energy + round + launch + report) against the model's own graph, captured in the same call.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-b.xz; chmod +x .device/bin/kc-b
export KC=$PWD/.device/bin/kc-b PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; shift
R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.csv 2>&1
go() { if [ $SECONDS -gt ${BUDGET:-400} ]; then echo "skipped (time): $*" >> $R/times.txt; return; fi; local s=$(date +%s); timeout ${TO:-200} tools/capture_and_run.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
case $P in
p1)
go llama2l_train_fusedadamw_b2s512 --model llama --layers 2 --hidden 2048 --heads 16 --kv-heads 16 --intermediate 5632 --vocab 32000 --batch 2 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused
go qwen2_2l_train_foreachadamw_b4s256 --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
go gpt2_4l_train_b4s256 --model gpt2 --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
;;
esac
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*kernels*.json" --exclude="*.kcplan" --exclude="*.kcir" $P
