#!/bin/bash
# Session 24. PART names a set of models; each is captured, answered by `kc run --reference`
# (a capped unit's launch at a duty cycle now timed from the feeder's batches inside its
# counted windows, not over launches after them; the round's cycle also taken by
# difference, a diagnostic), the model measured again (`--remeasure`), and reported.
# nvidia-smi samples clocks and power every 200 ms throughout (smi.csv). Run from the
# repository root, binary in .device/bin (KC=). BUDGET (s) skips models that would start
# after it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-a}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD
P=${1:?part}; out=$OUT/$P; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version,power.limit --format=csv > $out/gpu.csv 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 200 > $out/smi.csv 2>&1 & SMI=$!
T0=$(date +%s)
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $out/timeline.txt; }
kcrun() { # NAME
  local n=$1 s=$(date +%s%N)
  mark "kc run $n"
  timeout 200 $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.kc --json ${KC_ARGS:-} > $out/$n.run.json 2> $out/$n.run.log
  echo "$n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  local d=$out/$n.kc/$n
  mark "remeasure $n"
  $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report > $out/$n.report.log 2>&1
  [ -n "${PLANS:-}" ] && mkdir -p $out/plans && xz -3 -c $d/plan.kcplan > $out/plans/$n.kcplan.xz
  [ -z "${KEEP:-}" ] && rm -f $d/plan.kcplan $d/*.kcir
  rm -f $d/report/replay.trace.json
}
cross() { # NAME: the H100 plan on this GPU, against the model measured here (as kc run's defaults)
  local n=$1 p=.device/h100plans/$1.kcplan
  [ -f $p.xz ] || { mark "no H100 plan for $n"; return 0; }
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip cross $n (time)"; return; fi
  xz -dkf $p.xz
  local d=$out/$n.h100plan s=$(date +%s%N); mkdir -p $d
  mark "cross $n"
  timeout 100 $kc exec $p --verify --energy-window 0.5 --energy-repeats 3 -o $d/plan.graph.json --json > $d/graph.log 2>&1
  timeout 150 $kc exec $p --isolated --verify --energy-window 0.05 --energy-repeats 10 --energy-target 0.5 \
    -o $d/plan.isolated.context.json --json > $d/iso.log 2>&1
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --plan $p --reference $out/reference.json \
    --reference-entry $n -o $d/report > $d/report.log 2>&1
  echo "cross $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  rm -f $d/report/replay.trace.json
}
again() { # NAME: kc run once more on the same capture (its time; no remeasure)
  local n=$1 s=$(date +%s%N)
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip again $n (time)"; return; fi
  mark "kc run again $n"
  timeout 200 $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.again.kc --json ${KC_ARGS:-} > $out/$n.again.run.json 2> $out/$n.again.run.log
  echo "$n again rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  rm -f $out/$n.again.kc/$n/plan.kcplan $out/$n.again.kc/$n/*.kcir $out/$n.again.kc/$n/report/replay.trace.json
}
measured() { # NAME CAPTURE-ARGS: the model captured and measured only (for `cross`)
  local n=$1; shift
  args=("$@"); name=$n
  mark "capture $n"
  . tools/capture_inputs.sh "$@"
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
V=(--model vit_b_16 --batch 16 --dtype fp32 --tf32 --no-values)
T5=(--model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph)
Q2=(--model qwen2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph)
case $P in
a) # kc-p on the H100: ResNeXt-50's 110-unit step twice on one capture (deliverable 6,
   # the tick after a duty unit), then ViT-B/16 TF32 (the round's cycle by difference)
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   again resnext50_train
   model vit_b_16_tf32 "${V[@]}" ;;
b) # kc-p on the H100, models kc had not run: Swin V2-T (windowed, log-spaced position
   # bias; Swin-V2-B ran in session 18), Wide ResNet-50-2's training step (fused Adam; its
   # inference ran in session 17), ViT-L/16 in bf16; their plans kept for the H200
   model swin_v2_t --model swin_v2_t --batch 32 --dtype bf16 --no-values
   model wide_resnet50_train --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model vit_l_16 --model vit_l_16 --batch 16 --dtype bf16 --no-values ;;
c) # kc-p on the H200: the models of part b answered from their H200 traces, and their
   # H100 plans replayed there against the model measured there
   model swin_v2_t --model swin_v2_t --batch 32 --dtype bf16 --no-values
   cross swin_v2_t
   model vit_l_16 --model vit_l_16 --batch 16 --dtype bf16 --no-values
   cross vit_l_16
   model wide_resnet50_train --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   cross wide_resnet50_train ;;
d) # kc-p on the H100: ResNeXt-50's step on another card (deliverable 6), then ConvNeXt-B
   # (new), VGG-16-BN (the largest duty-cycle correction, session 19) and LLaMA's decode
   # graph (new; its training step ran in session 19)
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   cnn convnext_base convnext_base 32
   cnn vgg16_bn vgg16_bn 32
   model llama_decode_graph --model llama --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
e) # kc-p on the H100: T5's graph (112 units, deliverable 6 on an inference model), BERT's
   # training-step graph, Qwen2's and GPT-2's decode graphs: session 22-23's answers with
   # this build
   model t5_graph "${T5[@]}"
   model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   model qwen2_decode_graph "${Q2[@]}"
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
f) # kc-p on the H200: Wide ResNet-50-2's step captured and measured, and its H100 plan
   # (call 2) replayed there against it (skipped for time in call 3)
   measured wide_resnet50_train --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   cross wide_resnet50_train ;;
g) # kc-q on the H100 (the feeder's batches stamped by the windows' own clock): ViT-B/16
   # TF32, whose capped units are timed from their batches
   model vit_b_16_tf32 "${V[@]}" ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md $out/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
