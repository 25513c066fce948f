#!/bin/bash
# Issue 24 D6 beyond decode steps: models whose CUDA graph runs another program than their
# eager step, captured with --cuda-graph and replayed through their profiled capture
# (kc ingest --capture), against the model's own graph back to back, same call.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
R=$OUT/c8; mkdir -p $R
go() { local s=$(date +%s); timeout 220 tools/capture_and_replay.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
go qwen2_2l_train_foreachadamw_b4s256_graph --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach --cuda-graph
go convnext_t_fp32_tf32_b16_graph --model convnext_tiny --dtype fp32 --tf32 --batch 16 --cuda-graph
rm -f $R/*.kcir
cat $R/times.txt
cd $OUT && tar czf c8.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' c8 && rm -rf c8
