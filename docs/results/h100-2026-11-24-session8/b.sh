#!/bin/bash
# Issue 24 D5: tier-3 reads of results an earlier tier-3 step allocates read the result
# itself (plan format 10, bound reads) instead of a detached region with drawn values.
# Part a: the same plans with and without their bound reads (an ablation on earlier
# captures of the Qwen2 foreach-AdamW and GPT-2 fused-AdamW steps). Part c: both models
# captured afresh, replayed with this binary (graph + isolated + report) and the previous
# one (ecd8d41, graph), in the same call as the model's own measurement.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in kc-d5 kc-b; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
PREV=$PWD/.device/bin/kc-d5
export KC=$PWD/.device/bin/kc-b PYTHON=/opt/torch/.venv/bin/python
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
ex() { # BINARY PLAN TAG
  local s=$(date +%s)
  timeout 150 $1 exec $2 --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $R/$3.graph.json > $R/$3.graph.log 2>&1
  echo "$3: rc=$? $(( $(date +%s) - s )) s $(grep -o 'non-finite values [0-9.]* %' $R/$3.graph.log)" >> $R/summary.txt
}
prep() { # BINARY TRACE TAG INGEST-ARGS...: ingest and lower into $R/TAG.lowered.kcir
  local b=$1 t=$2 tag=$3; shift 3
  $b ingest $t "$@" -o $R/$tag.kcir > /dev/null 2>$R/$tag.ingest.err
  $b lower --tiers $R/$tag.kcir -o $R/$tag.lowered.kcir > /dev/null 2>&1
  rm -f $R/$tag.kcir
}
pack() { cd $OUT && tar cJf $1.txz --exclude="r/*.pt.trace.json.gz" --exclude="r/*.et.json.gz" --exclude="r/*.values.bin" --exclude="r/*kernels*.json" --exclude="r/*.kcplan" --exclude="r/*.kcir" r; cd - > /dev/null; }
cap() { # NAME CAPTURE-ARGS: capture; this binary: graph, isolated, report; previous: graph
  local n=$1; shift; local s=$(date +%s)
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@"
  echo "captured $n: $(( $(date +%s) - s )) s" >> $R/summary.txt
  prep $KC $R/$n.pt.trace.json.gz $n "${inputs[@]}"
  $KC plan $R/$n.lowered.kcir -o $R/$n.own.kcplan > /dev/null 2>&1
  $KC plan show $R/$n.own.kcplan > $R/$n.own.planshow.txt 2>&1
  ex $KC $R/$n.own.kcplan $n.own
  timeout 150 $KC exec $R/$n.own.kcplan --isolated --cache context --no-energy -o $R/$n.isolated.json > $R/$n.isolated.log 2>&1
  $KC report $R/$n.own.graph.json --isolated $R/$n.isolated.json --plan $R/$n.own.kcplan --reference $R/reference.json --reference-entry $n -o $R/$n.report > /dev/null 2>&1
  prep $PREV $R/$n.pt.trace.json.gz $n.prev "${inputs[@]}"
  $PREV plan $R/$n.prev.lowered.kcir -o $R/$n.prev.kcplan > /dev/null 2>&1
  ex $PREV $R/$n.prev.kcplan $n.prev
}
I=.device/in/b
for m in qwen2 gpt2; do for v in bound unbound; do ex $KC $I/$m.$v.kcplan ablation.$m.$v; done; done
pack a
cap qwen2_2l_train_foreachadamw_b4s256 --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
pack c1
cap gpt2_4l_train_b4s256 --model gpt2 --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
pack c2
