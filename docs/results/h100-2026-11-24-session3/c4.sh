#!/bin/bash
# Issue 24: an encoder-decoder (T5-base shapes, fp32 in TF32) captured and replayed with its
# ET, and replays without an ET (heuristic memory image) of it and of a GPT-2 forward.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
R=$OUT/c4; mkdir -p $R
go() { local s=$(date +%s); timeout 200 tools/capture_and_replay.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; }
noet() { local M=$R/$1 N=$R/$1_noet; $KC ingest $M.pt.trace.json.gz -o $N.kcir --json > $N.ingest.json 2>&1
  $KC lower --tiers $N.kcir -o $N.lowered.kcir --json > $N.lower.json 2>&1
  $KC plan $N.lowered.kcir -o $N.kcplan --json > $N.plan.json 2>&1
  $KC exec $N.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $N.graph.json > $N.graph.log 2>&1
  echo "rc=$? $1 without ET" >> $R/times.txt; }
go t5_b8s256_fp32tf32 --model t5 --batch 8 --seq 256 --dtype fp32 --tf32
noet t5_b8s256_fp32tf32
go gpt2_12l_b8s256_fp16 --model gpt2 --batch 8 --seq 256 --dtype fp16
noet gpt2_12l_b8s256_fp16
rm -f $R/*.kcir
cat $R/times.txt
cd $OUT && tar czf c4.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' c4 && rm -rf c4
