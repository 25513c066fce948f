#!/bin/bash
# NVML polling and the board's power: (1) the model's own graph measured back to back with
# and without a thread reading NVML as kc's windows did (pw.py); (2) kc's graph of Swin-T
# (through its capture) with the energy windows of kc-t (counter read every 0.2 ms) and of
# kc-a (counter left alone until a tick is due), alternated, and the model measured again.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in kc-t kc-a; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
export KC=$PWD/.device/bin/kc-a PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
ex() { # BIN PLAN TAG [exec args]
  local b=$1 p=$2 t=$3; shift 3
  mark "start $b $t"
  timeout 150 .device/bin/$b exec $p --runs 100 --energy-window 1 --energy-repeats 3 "$@" -o $R/$t.graph.json > $R/$t.graph.log 2>&1
  mark "end $b $t rc=$?"
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
a)
  mark "pw swin"; $PYTHON .device/pw.py --model swin_t --batch 16 > $R/pw_swin.jsonl 2> $R/pw_swin.err
  mark "pw decode"; $PYTHON .device/pw.py --model qwen2 --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode > $R/pw_decode.jsonl 2> $R/pw_decode.err
  A="--model swin_t --batch 16 --cuda-graph"; n=swin_t_b16_graph
  cap $n $A
  ex kc-t $R/$n.kcplan t1; ex kc-a $R/$n.kcplan a1; ex kc-t $R/$n.kcplan t2; ex kc-a $R/$n.kcplan a2
  mm $n $A
  ;;
esac
rm -f $R/*.kcplan $R/*.kcir
cd $OUT && tar cJf $P.txz --exclude="$P/*.pt.trace.json.gz" --exclude="$P/*.et.json.gz" --exclude="$P/*.values.bin" $P
