#!/bin/bash
# Issue 27's energy misses on training steps and T5: units measured alone over the values
# earlier units left at their places (kc-a, the binary of c51d5f8) against units whose
# places start from the image's starting values, with a census of their values before and
# after (kc-b). One capture per model; `kc run` with each binary on it (b, a, b), the model
# measured again after each run; the report at kc's temperature. BINS=kc-c ONLY=kc-c: one
# run of that binary instead (call 2).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in ${BINS:-kc-a kc-b}; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
py=/opt/torch/.venv/bin/python here=$PWD
P=${1:?part}; out=$OUT/$P; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $out/gpu.csv 2>&1
T0=$(date +%s)
mark() { echo "$(date -u +%H:%M:%S) $*" >> $out/timeline.txt; }
kcrun() { # BINARY NAME TAG
  local kc=.device/bin/$1 n=$2 tag=$3 s=$(date +%s%N)
  mark "kc run $tag ($1) $n"
  timeout 150 $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.$tag --json > $out/$n.$tag.run.json 2> $out/$n.$tag.run.log
  echo "$n $tag $1 rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  local d=$out/$n.$tag/$n
  $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  iso=$(ls $d/plan.isolated.*.json 2>/dev/null | head -1)
  $kc report $d/plan.graph.json ${iso:+--isolated $iso} --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report > $out/$n.$tag.report.log 2>&1
  rm -f $d/plan.kcplan $d/*.kcir $d/report/replay.trace.json
}
model() { # NAME CAPTURE-ARGS
  local n=$1; shift
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; return; fi
  args=("$@"); name=$n
  mark "capture $n"
  . tools/capture_inputs.sh "$@"
  if [ -n "${ONLY:-}" ]; then kcrun $ONLY $n ${ONLY#kc-}; else kcrun kc-b $n b1; kcrun kc-a $n a; kcrun kc-b $n b2; fi
}
case $P in
l) model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused ;;
q) model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach ;;
r) model resnet50_b32 --model resnet50 --batch 32 --dtype bf16 --channels-last ;;
t) model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph ;;
esac
for f in $out/*/*/report/report.md; do echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, " $f | head -8; done >> $out/summary.txt
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" $P
