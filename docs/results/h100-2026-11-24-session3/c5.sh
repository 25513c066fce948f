#!/bin/bash
# Issue 24 D6 beyond decode steps: models whose CUDA graph runs another program than their
# eager step, captured with --cuda-graph and replayed through their profiled capture
# (kc ingest --capture), against the model's own graph back to back, same call.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
R=$OUT/c5; mkdir -p $R
go() { local s=$(date +%s); timeout 220 tools/capture_and_replay.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
go swin_t_b16_graph --model swin_t --batch 16 --cuda-graph
go vit_b16_fp32_tf32_b16_graph --model vit_b_16 --dtype fp32 --tf32 --batch 16 --cuda-graph
go t5_b8s256_fp32tf32_graph --model t5 --batch 8 --seq 256 --dtype fp32 --tf32 --cuda-graph
go resnet18_train_sgdm_b32_cl_graph --model resnet18 --mode train --optimizer sgd-momentum --batch 32 --dtype bf16 --channels-last --cuda-graph
go llama2l_train_fusedadamw_b4s256_graph --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
rm -f $R/*.kcir
cat $R/times.txt
cd $OUT && tar czf c5.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' c5 && rm -rf c5
