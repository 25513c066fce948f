#!/bin/bash
# Issue 27 on Swin-T with its masks and ViT with the GEMMs PyTorch ran: kc run (graph + isolated with
# energy + round + launch + report) against the model's own graph, captured in the same call.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-n.xz; chmod +x .device/bin/kc-n
export KC=$PWD/.device/bin/kc-n PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; shift
R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.csv 2>&1
go() { if [ $SECONDS -gt ${BUDGET:-400} ]; then echo "skipped (time): $*" >> $R/times.txt; return; fi; local s=$(date +%s); timeout ${TO:-200} tools/capture_and_run.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
case $P in
r1)
go swin_t_b16 --model swin_t --batch 16
go vit_b16_fp32_tf32_b16 --model vit_b_16 --dtype fp32 --tf32 --batch 16
;;
esac
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*kernels*.json" --exclude="*.kcplan" --exclude="*.kcir" $P
