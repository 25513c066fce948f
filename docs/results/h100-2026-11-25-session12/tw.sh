#!/bin/bash
# Issue 24, the per-step reference: one --cuda-graph capture per model gives, from one run,
# the model's eager trace (with its ET) and its own CUDA graph's replays (with the profiled
# capture). `kc diff EAGER GRAPH` compares the model with itself launch by launch; kc's
# plan from each trace is replayed as one graph with CUPTI and 3 x 1 s energy windows; the
# model is measured again; both reports against the model's graph.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
B=${KCBIN:-kc-s}
xz -dkf .device/bin/$B.xz; chmod +x .device/bin/$B
KC=.device/bin/$B PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
T0=$(date +%s)
replay() { # NAME PLAN-NAME INGEST-ARGS...
  local n=$1 p=$2; shift 2
  $KC ingest "$@" -o $R/$p.kcir > $R/$p.ingest.log 2>&1
  $KC lower --tiers $R/$p.kcir -o $R/$p.l.kcir > $R/$p.lower.log 2>&1
  $KC plan $R/$p.l.kcir -o $R/$p.kcplan > $R/$p.plan.log 2>&1
  mark "exec $p"
  $KC exec $R/$p.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $R/$p.graph.json > $R/$p.log 2>&1
}
model() { # NAME CAPTURE-ARGS
  local n=$1; shift
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-420} ]; then mark "skip $n (time)"; return; fi
  mark "capture $n"
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@" --cuda-graph
  $KC diff $R/${n}_eager.pt.trace.json.gz $R/$n.pt.trace.json.gz -o $R/$n.diff.md --json > $R/$n.diff.json 2> $R/$n.diff.err
  replay $n $n.g $R/$n.pt.trace.json.gz "${inputs[@]}"
  replay $n $n.e $R/${n}_eager.pt.trace.json.gz --shapes $R/${n}_eager.et.json.gz
  mark "remeasure $n"
  $PYTHON traces/capture.py "$@" --cuda-graph --name $n --out $R --remeasure >> $R/$n.remeasure.log 2>&1
  for p in $n.g $n.e; do
    $KC report $R/$p.graph.json --plan $R/$p.kcplan --reference $R/reference.json --reference-entry $n -o $R/$p.report > $R/$p.report.log 2>&1
    rm -f $R/$p.report/replay.trace.json
  done
  rm -f $R/$n*.kcir $R/$n*.kcplan
}
case $P in
t1)
  model swin --model swin_t --batch 16
  model gpt2t --model gpt2 --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
  model vit --model vit_b_16 --dtype fp32 --tf32 --batch 16
  model r18sgd --model resnet18 --mode train --optimizer sgd-momentum --batch 32 --dtype bf16 --channels-last
  ;;
esac
for f in $R/*.report/report.md; do echo "== $f"; grep "kc graph replay |" $f; grep -A2 "step median" $f | tail -1; done > $R/summary.txt
for f in $R/*.diff.md; do echo "== $f"; grep -A3 "## Launch by launch" $f | tail -1; grep -A3 "| aligned" $f | sed -n 3p; done >> $R/summary.txt
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" $P
