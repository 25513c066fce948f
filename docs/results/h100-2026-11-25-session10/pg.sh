#!/bin/bash
# cuBLAS's memsets replayed once: kc-g (memsets under a GEMM op join its tier-2 unit)
# against kc-m (the session's earlier binary, which also replayed them as tier-1 units),
# each lowering and planning the same capture, their graph replays alternated, the model
# measured again after them (its energy at kc's temperature in the reports).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in kc-m kc-g; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
export PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
ab() { # NAME CAPTURE-ARGS
  local n=$1; shift
  mark "start capture $n"
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@"
  for b in kc-m kc-g; do
    K=.device/bin/$b
    $K ingest $R/$n.pt.trace.json.gz "${inputs[@]}" -o $R/$n.$b.kcir > /dev/null 2>$R/$n.$b.ingest.err
    $K lower --tiers $R/$n.$b.kcir -o $R/$n.$b.lowered.kcir > $R/$n.$b.lower.txt 2>&1
    $K plan $R/$n.$b.lowered.kcir -o $R/$n.$b.kcplan > /dev/null 2>&1
  done
  for i in 1 2; do for b in kc-m kc-g; do
    mark "start $b $n $i"
    timeout 120 .device/bin/$b exec $R/$n.$b.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $R/$n.$b.$i.graph.json > $R/$n.$b.$i.graph.log 2>&1
    mark "end $b $n $i rc=$?"
  done; done
  $PYTHON traces/capture.py "$@" --name $n --out $R --remeasure >> $R/$n.remeasure.log 2>&1
  for b in kc-m kc-g; do for i in 1 2; do
    .device/bin/kc-g report $R/$n.$b.$i.graph.json --reference $R/reference.json --reference-entry $n -o $R/$n.$b.$i.report > /dev/null 2>&1
  done; done
}
case $P in
g1)
  ab swin_t_b16_graph --model swin_t --batch 16 --cuda-graph
  ab swin_t_b16 --model swin_t --batch 16
  ;;
esac
rm -f $R/*.kcplan $R/*.kcir
cd $OUT && tar cJf $P.txz --exclude="$P/*.pt.trace.json.gz" --exclude="$P/*.et.json.gz" --exclude="$P/*.values.bin" $P
