#!/bin/bash
# Issue 24 with the session's final binary: CUDA-graph decode steps through their profiled
# capture (D6), a windowed-attention model and the MoE with the detached results (D5), and
# the MoE without its ET (heuristic image). Captured and replayed in the same call.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
R=$OUT/c3; mkdir -p $R
go() { local s=$(date +%s); timeout 200 tools/capture_and_replay.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
go gpt2s4l_decode_b4 --model gpt2 --layers 4 --batch 4 --seq 128 --dtype fp16 --mode decode --cuda-graph
go llama4l_decode_b8 --model llama --layers 4 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2816 --vocab 32000 --batch 8 --seq 512 --dtype bf16 --mode decode --cuda-graph
go qwen2_2l_decode_b16 --model qwen2 --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
go swin_t_b16 --model swin_t --batch 16
go mixtral2l_prefill_b2s256 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256
# The MoE without its Execution Trace: the heuristic memory image.
M=$R/mixtral2l_prefill_b2s256; N=$R/mixtral_noet
$KC ingest $M.pt.trace.json.gz -o $N.kcir --json > $N.ingest.json 2>&1
$KC lower --tiers $N.kcir -o $N.lowered.kcir --json > $N.lower.json 2>&1
$KC plan $N.lowered.kcir -o $N.kcplan --json > $N.plan.json 2>&1
$KC exec $N.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $N.graph.json > $N.graph.log 2>&1
echo "rc=$? mixtral without ET" >> $R/times.txt
rm -f $R/*.kcir
cat $R/times.txt
cd $OUT && tar czf c3.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' c3 && rm -rf c3
