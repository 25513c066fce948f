#!/bin/bash
# Does kc's graph draw more power than the model's own graph, or was it measured hotter?
# The two measured alternately in one call (model at the end of its capture, then kc, the
# model again with `capture.py --remeasure`, ...), each window with the GPU's temperature
# (kc's results, capture.py's back_to_back), and nvidia-smi logging every 100 ms.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-t.xz; chmod +x .device/bin/kc-t
export KC=$PWD/.device/bin/kc-t PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
nvidia-smi --query-gpu=timestamp,temperature.gpu,power.draw,clocks.sm,clocks.mem,fan.speed --format=csv,noheader -lms 100 > $R/smi.csv 2>&1 &
SMI=$!
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
ex() { # PLAN TAG [exec args]
  local p=$1 t=$2; shift 2
  mark "start kc $t"
  timeout 150 $KC exec $p --runs 100 --energy-window 1 --energy-repeats 3 "$@" -o $R/$t.graph.json > $R/$t.graph.log 2>&1
  mark "end kc $t rc=$?"
}
mm() { # NAME CAPTURE-ARGS
  local n=$1; shift
  mark "start model $n"
  $PYTHON traces/capture.py "$@" --name $n --out $R --remeasure >> $R/$n.remeasure.log 2>&1
  mark "end model $n rc=$?"
}
cap() { # NAME CAPTURE-ARGS
  local n=$1; shift
  mark "start capture $n"
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@"
  mark "end capture $n"
  $KC ingest $R/$n.pt.trace.json.gz "${inputs[@]}" -o $R/$n.kcir > /dev/null 2>$R/$n.ingest.err
  $KC lower --tiers $R/$n.kcir -o $R/$n.lowered.kcir > /dev/null 2>&1
  $KC plan $R/$n.lowered.kcir -o $R/$n.kcplan > /dev/null 2>&1
}
case $P in
s)
  A="--model swin_t --batch 16 --cuda-graph"
  cap swin_t_b16_graph $A
  for i in 1 2 3; do ex $R/swin_t_b16_graph.kcplan kc$i; mm swin_t_b16_graph $A; done
  ex $R/swin_t_b16_graph.kcplan soak --energy-repeats 15
  mm swin_t_b16_graph $A
  ;;
d)
  A="--model qwen2 --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph"
  n=qwen2_2l_decode_b16
  cap $n $A
  for i in 1 2; do ex $R/$n.kcplan kc$i; mm $n $A; done
  # The eager-twin path (--eager): the graph's kernels take the ops of the eager step.
  $KC ingest $R/$n.pt.trace.json.gz --eager $R/${n}_eager.pt.trace.json.gz --shapes $R/${n}_eager.et.json.gz -o $R/$n.tw.kcir > /dev/null 2>$R/$n.tw.ingest.err
  $KC lower --tiers $R/$n.tw.kcir -o $R/$n.tw.lowered.kcir > $R/$n.tw.lower.txt 2>&1
  $KC plan $R/$n.tw.lowered.kcir -o $R/$n.tw.kcplan > /dev/null 2>&1
  $KC plan show $R/$n.tw.kcplan > $R/$n.tw.planshow.txt 2>&1
  ex $R/$n.tw.kcplan twin --verify
  mm $n $A
  ;;
esac
kill $SMI
rm -f $R/*.kcplan $R/*.kcir
cd $OUT && tar cJf $P.txz --exclude="$P/*.pt.trace.json.gz" --exclude="$P/*.et.json.gz" --exclude="$P/*.values.bin" $P
