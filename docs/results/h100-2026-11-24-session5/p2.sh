#!/bin/bash
# Issue 27, session 5: kc run with contiguous one-tick unit energy windows (D6) and the
# switches priced by reach (rounds of several sizes); models captured and answered in the
# same call. Keeps each model's plan (xz) for the H200 replay (D5).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; shift
R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.csv 2>&1
go() { if [ $SECONDS -gt ${BUDGET:-400} ]; then echo "skipped (time): $*" >> $R/times.txt; return; fi; local s=$(date +%s); timeout ${TO:-200} tools/capture_and_run.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
case $P in
q1)
go t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
go resnet34_fp32_tf32_b16 --model resnet34 --batch 16 --dtype fp32 --tf32
go gpt2_6l_decode_b8_graph --model gpt2 --layers 6 --batch 8 --seq 256 --dtype fp16 --mode decode --cuda-graph
go efficientnet_b0_b32_fp16 --model efficientnet_b0 --batch 32 --dtype fp16
go mobilenet_v3_large_b64_fp16 --model mobilenet_v3_large --batch 64 --dtype fp16
;;
q2)
go t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
go mobilenet_v3_large_b64_fp16 --model mobilenet_v3_large --batch 64 --dtype fp16
;;
q3)
go t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
go resnet34_fp32_tf32_b16 --model resnet34 --batch 16 --dtype fp32 --tf32
go gpt2_6l_decode_b8_graph --model gpt2 --layers 6 --batch 8 --seq 256 --dtype fp16 --mode decode --cuda-graph
go llama2l_train_fusedadamw_b2s512 --model llama --layers 2 --hidden 2048 --heads 16 --kv-heads 16 --intermediate 5632 --vocab 32000 --batch 2 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused
go mobilenet_v3_large_b64_fp16 --model mobilenet_v3_large --batch 64 --dtype fp16
;;
q4)
go t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
go mobilenet_v3_large_b64_fp16 --model mobilenet_v3_large --batch 64 --dtype fp16
go efficientnet_b0_b32_fp16 --model efficientnet_b0 --batch 32 --dtype fp16
;;
q5)
go resnet34_fp32_tf32_b16 --model resnet34 --batch 16 --dtype fp32 --tf32
go gpt2_6l_decode_b8_graph --model gpt2 --layers 6 --batch 8 --seq 256 --dtype fp16 --mode decode --cuda-graph
;;
esac
cat $R/times.txt
find $R -name '*.kcir' -delete
mkdir -p $OUT/plans
for f in $R/*/*/plan.kcplan; do m=$(basename $(dirname $f)); xz -T0 -6 -c $f > $OUT/plans/$m.kcplan.xz; done
cd $OUT && tar cJf plans.txz plans && rm -rf plans
tar czf $P.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' --exclude='*.inductor_cache.tar.gz' --exclude='*.kcplan' $P && rm -rf $P
ls -la $OUT
