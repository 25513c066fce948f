#!/bin/bash
# Issue 24 D6: CUDA-graph decode steps captured with their profiled capture and replayed
# through `kc ingest --capture`; D5: where the remaining non-finite values of an fp32
# model build up.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
R=$OUT/c2; mkdir -p $R
go() { local s=$(date +%s); timeout 200 tools/capture_and_replay.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
go gpt2s4l_decode_b4 --model gpt2 --layers 4 --batch 4 --seq 128 --dtype fp16 --mode decode --cuda-graph
go llama4l_decode_b8 --model llama --layers 4 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2816 --vocab 32000 --batch 8 --seq 512 --dtype bf16 --mode decode --cuda-graph
go qwen2_2l_decode_b16 --model qwen2 --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
go vit_b16_fp32_tf32_b16 --model vit_b_16 --dtype fp32 --tf32 --batch 16
cat $R/times.txt
# The traces of the smallest decode step come back whole (the CI fixture of the linkage).
mkdir -p $OUT/fx; cp $R/gpt2s4l_decode_b4*.gz $OUT/fx/ 2>/dev/null
cd $OUT && tar czf c2.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' c2 && tar czf fx.tgz fx && rm -rf c2 fx
