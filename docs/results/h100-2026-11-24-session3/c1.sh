#!/bin/bash
# Issue 24 D5 (finite images: optimizer state roles, detached allocated results, restored
# state) on the training steps and an fp32 model, and D6's first captures of CUDA-graph
# decode steps with their profiled capture.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
R=$OUT/c1; mkdir -p $R
go() { local s=$(date +%s); timeout 200 tools/capture_and_replay.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
go llama2l_train_fusedadamw_b4s256 --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
go resnet18_train_sgdm_b32_cl --model resnet18 --mode train --optimizer sgd-momentum --batch 32 --dtype bf16 --channels-last
go qwen2_2l_train_foreachadamw_b4s256 --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
go vit_b16_fp32_tf32_b16 --model vit_b_16 --dtype fp32 --tf32 --batch 16
D=$OUT/c1/decode; mkdir -p $D
cap() { local s=$(date +%s); timeout 150 $PYTHON traces/capture.py "$@" --out $D > $D/$2.log 2>&1; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
cap --name llama4l_decode_b8 --model llama --layers 4 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2816 --vocab 32000 --batch 8 --seq 512 --dtype bf16 --mode decode --cuda-graph
cap --name gpt2s4l_decode_b4 --model gpt2 --layers 4 --batch 4 --seq 128 --dtype fp16 --mode decode --cuda-graph
cat $R/times.txt
cd $OUT && tar czf c1.tgz --exclude='c1/*.pt.trace.json.gz' --exclude='c1/*.et.json.gz' c1
