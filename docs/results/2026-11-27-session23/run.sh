#!/bin/bash
# Session 23. PART names a set of models; each is captured, answered by `kc run --reference`
# (a unit's kernels alone now recorded over launches back to back as the round's are; the
# capped units' windows back to back end at their minimum, their duty cycle starts at a
# third; the round's energy only on request), the model measured again (`--remeasure`),
# and reported. nvidia-smi samples clocks and power every 200 ms throughout (smi.csv). Run
# from the repository root, binary in .device/bin (KC=). BUDGET (s) skips models that would
# start after it.
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
a) # kc-j on the H100: the two models whose gap term moved most between runs (ViT-B/16's
   # 15 switches a cycle, BERT's graph), with the units' kernels over launches back to
   # back; and ResNeXt-50's 110-unit step, the one over a minute (deliverable 6)
   model vit_b_16_tf32 "${V[@]}"
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph ;;
b) # kc-j on the H100: the training step with the most capped units' energy (BERT's), T5's
   # graph (its round's kernels), Swin-T and Qwen2's decode graph (not run: call 2 ran
   # part c instead)
   model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   model t5_graph "${T5[@]}"
   model swin_t --model swin_t --batch 32 --dtype bf16 --no-values
   model qwen2_decode_graph "${Q2[@]}" ;;
c) # kc-k on the H100 (a capped unit's duty cycle starts at a fifth, its timing overlaps
   # the wait for a tick; the spin's windows at most five): ResNeXt-50's step again
   # (deliverable 6), BERT's training step (the most capped units' energy), T5's graph
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   model t5_graph "${T5[@]}" ;;
d) # kc-l on the H100 (a unit's duty cycle at a third again, its leading windows left out
   # while the clock comes back, the launch timed after them; a window counts as capped
   # where the cap held its clock under 99 % of the run's top; the windows alone end at the
   # first so held down): the three models with the most capped units
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   model vit_b_16_tf32 "${V[@]}" ;;
e) # kc-m on the H100 (a duty unit's launch timed over 8 launches after its windows, not
   # 20): ResNeXt-50's step (deliverable 6), then four models of session 22's table
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model t5_graph "${T5[@]}"
   model swin_t --model swin_t --batch 32 --dtype bf16 --no-values
   model qwen2_decode_graph "${Q2[@]}"
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
f) # kc-n on the H100 (the feeder keeps 12 ms queued, not 32): ResNeXt-50's step twice
   # on one capture (deliverable 6), then Swin-T's 162 units
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   again resnext50_train
   model swin_t --model swin_t --batch 32 --dtype bf16 --no-values ;;
g) # kc-o on the H100 (the feeder at 32 ms again; otherwise kc-m): ResNeXt-50's step twice
   # on one capture (deliverable 6)
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   again resnext50_train ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md $out/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
