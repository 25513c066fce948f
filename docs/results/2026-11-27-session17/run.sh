#!/bin/bash
# Session 17. PART names a set of models; each is captured (capture.py now counts the calls
# *completed* between the energy counter's ticks, and records the old count over calls
# enqueued beside it), answered by `kc run --reference` (energy windows now record the SM
# clock and its event reasons), the model measured again (`--remeasure`), and reported.
# Models in ROUND_VARIANTS also get isolated passes without energy of the same plan whose
# rounds differ (VARIANTS, name:flags; by default with binary kc-r: the default again, 9
# cycles per launch, restoring with 2 cycles, restoring with its own cycles: T5's round ran
# its units 6.5 % slower than kc's graph in session 16, only a restoring round of 9 cycles
# matched). nvidia-smi samples clocks and power every 200 ms throughout (smi.csv). Run from
# the repository root, binary in .device/bin (KC=).
# BUDGET (s) skips models that would start after it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-r}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD
P=${1:?part}; out=$OUT/$P; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version,power.limit --format=csv > $out/gpu.csv 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 200 > $out/smi.csv 2>&1 & SMI=$!
T0=$(date +%s)
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $out/timeline.txt; }
variants() { # NAME: the same plan's rounds, without energy
  local n=$1 d=$out/$1.kc/$1 v
  local vs=("default:" "cycles9:--round-cycles 9" "restoring2:--round-restoring --round-cycles 2" "restoring:--round-restoring")
  [ -n "${VARIANTS:-}" ] && read -ra vs <<< "$VARIANTS"
  for v in "${vs[@]}"; do
    mark "round $n ${v%%:*}"
    timeout 60 $kc exec $d/plan.kcplan --isolated --verify --no-energy ${v#*:} \
      -o $d/plan.isolated.${v%%:*}.json --json > $out/$n.${v%%:*}.log 2>&1
  done
}
kcrun() { # NAME
  local n=$1 s=$(date +%s%N)
  mark "kc run $n"
  timeout 200 $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.kc --json > $out/$n.run.json 2> $out/$n.run.log
  echo "$n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  local d=$out/$n.kc/$n
  case " ${ROUND_VARIANTS:-} " in *" $n "*) [ -f $d/plan.kcplan ] && variants $n ;; esac
  mark "remeasure $n"
  $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report > $out/$n.report.log 2>&1
  rm -f $d/plan.kcplan $d/*.kcir $d/report/replay.trace.json
}
model() { # NAME CAPTURE-ARGS
  local n=$1; shift
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; return; fi
  args=("$@"); name=$n
  mark "capture $n"
  . tools/capture_inputs.sh "$@"
  kcrun $n
}
cnn() { model $1 --model $2 --batch ${3:-32} --dtype bf16 --channels-last --no-values; }
case $P in
a) # T5 (its round) and the energy misses of session 16
   ROUND_VARIANTS=${ROUND_VARIANTS-"t5_graph vit_b_32"}
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   cnn vgg16_bn vgg16_bn
   model vit_b_32 --model vit_b_32 --batch 32 --dtype bf16 --no-values
   cnn resnet50 resnet50
   model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused ;;
b) # session 16's models again, with kc-t
   cnn effnet_v2_s efficientnet_v2_s; cnn mobilenet_v2 mobilenet_v2; cnn resnet152 resnet152 16
   cnn wide_resnet50 wide_resnet50_2; cnn googlenet googlenet ;;
c) # transformers and decode graphs
   model swin_s --model swin_s --batch 16 --dtype bf16 --no-values
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model mistral_decode_graph --model mistral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   cnn convnext_small convnext_small 16 ;;
d) # Qwen2 again (capture.py's deeper queue), the model call 4 skipped, three of the rest
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
   cnn convnext_small convnext_small 16
   model maxvit_t --model maxvit_t --batch 16 --dtype bf16 --no-values
   cnn inception_v3 inception_v3; cnn mnasnet mnasnet1_0 ;;
e) # the rest of session 16's 21
   cnn shufflenet_v2 shufflenet_v2_x1_0 64; cnn resnext50 resnext50_32x4d
   model swin_v2_t --model swin_v2_t --batch 16 --dtype bf16 --no-values ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P
