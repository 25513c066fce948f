#!/bin/bash
# Issue 27 D4: models kc was not tuned on, captured and answered with `kc run --reference`
# in the same call (plain sum and prediction from parts against the model's CUDA graph).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; shift
R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.csv 2>&1
go() { if [ $SECONDS -gt ${BUDGET:-400} ]; then echo "skipped (time): $*" >> $R/times.txt; return; fi; local s=$(date +%s); timeout ${TO:-170} tools/capture_and_run.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
case $P in
p0)
go gpt2_2l_b2s128_smoke --model gpt2 --layers 2 --batch 2 --seq 128 --dtype fp16
go gpt2s4l_decode_b4_graph --model gpt2 --layers 4 --batch 4 --seq 128 --dtype fp16 --mode decode --cuda-graph
;;
p1)
go resnet50_b32_cl_bf16 --model resnet50 --batch 32 --dtype bf16 --channels-last
go mistral2l_prefill_b2s512 --model mistral --layers 2 --hidden 2048 --heads 16 --kv-heads 4 --intermediate 5632 --vocab 32000 --batch 2 --seq 512 --dtype bf16
go bloom4l_prefill_b4s256 --model bloom --layers 4 --batch 4 --seq 256 --dtype fp16
go gpt2_6l_decode_b8_graph --model gpt2 --layers 6 --batch 8 --seq 256 --dtype fp16 --mode decode --cuda-graph
;;
p2)
go efficientnet_b0_b32_fp16 --model efficientnet_b0 --batch 32 --dtype fp16
go t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
go swin_s_b8_fp16 --model swin_s --batch 8 --dtype fp16
go mixtral2l_prefill_b4s128 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 4 --seq 128
;;
p3)
go llama2l_train_fusedadamw_b2s512 --model llama --layers 2 --hidden 2048 --heads 16 --kv-heads 16 --intermediate 5632 --vocab 32000 --batch 2 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused
go vit_b16_train_fusedadamw_b8 --model vit_b_16 --batch 8 --dtype bf16 --mode train --optimizer adamw-fused
go qwen2_4l_decode_b4_graph --model qwen2 --layers 4 --batch 4 --seq 512 --dtype bf16 --mode decode --cuda-graph
go resnet34_fp32_tf32_b16 --model resnet34 --batch 16 --dtype fp32 --tf32
;;
p4)
go resnet50_b32_cl_bf16 --model resnet50 --batch 32 --dtype bf16 --channels-last
go gpt2_6l_decode_b8_graph --model gpt2 --layers 6 --batch 8 --seq 256 --dtype fp16 --mode decode --cuda-graph
go densenet121_b16_fp16 --model densenet121 --batch 16 --dtype fp16
go llama3l_decode_b2_graph --model llama --layers 3 --hidden 2048 --heads 16 --kv-heads 8 --intermediate 5632 --vocab 32000 --batch 2 --seq 1024 --dtype bf16 --mode decode --cuda-graph
;;
p5)
go resnet34_fp32_tf32_b16 --model resnet34 --batch 16 --dtype fp32 --tf32
go t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
go efficientnet_b0_b32_fp16 --model efficientnet_b0 --batch 32 --dtype fp16
;;
p6)
go mobilenet_v3_large_b64_fp16 --model mobilenet_v3_large --batch 64 --dtype fp16
go swin_v2_t_b8_fp16 --model swin_v2_t --batch 8 --dtype fp16
;;
p7)
go gpt2_6l_decode_b8_graph --model gpt2 --layers 6 --batch 8 --seq 256 --dtype fp16 --mode decode --cuda-graph
go resnet34_fp32_tf32_b16 --model resnet34 --batch 16 --dtype fp32 --tf32
;;
esac
cat $R/times.txt
find $R -name '*.kcir' -delete
cd $OUT && tar czf $P.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' --exclude='*.inductor_cache.tar.gz' --exclude='*.kcplan' $P && rm -rf $P
