#!/bin/bash
# Session 36 (session 35's run.sh; parts k, l and m are this session's; i and j as session 35
# prepared them). PART names a set of models; each is
# captured, answered by `kc run --reference` with KC_ARGS, the model measured again
# (`--remeasure`), and reported; `abflags` answers it a second time on the same capture
# with other flags.
# nvidia-smi samples clocks and power every 200 ms throughout (smi.csv). Run from the
# repository root, binary in .device/bin (KC=). BUDGET (s) skips models that would start
# after it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-b}
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
  timeout ${RUN_TIMEOUT:-200} $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.kc --json ${KC_ARGS:-} > $out/$n.run.json 2> $out/$n.run.log
  echo "$n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  local d=$out/$n.kc/$n
  if [ -z "${NO_REMEASURE:-}" ]; then
    mark "remeasure $n"
    $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  fi
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
  timeout ${RUN_TIMEOUT:-200} $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
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
ab() { # NAME FIRST SECOND: kc run with --unit-values FIRST (and the remeasure), then again
  # on the same capture with --unit-values SECOND
  local n=$1
  KC_ARGS="${KC_ARGS0:-} --unit-values $2" kcrun $n
  KC_ARGS="${KC_ARGS0:-} --unit-values $3" again $n
}
abmodel() { # NAME FIRST SECOND CAPTURE-ARGS
  local n=$1 a=$2 b=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; return; fi
  args=("$@"); name=$n
  mark "capture $n"
  . tools/capture_inputs.sh "$@"
  ab $n $a $b
}
abflags() { # NAME "FIRST FLAGS" "SECOND FLAGS" CAPTURE-ARGS: kc run with the first flags (and
  # the remeasure), then again on the same capture with the second
  local n=$1 a=$2 b=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; return; fi
  args=("$@"); name=$n
  mark "capture $n"
  . tools/capture_inputs.sh "$@"
  KC_ARGS="${KC_ARGS0:-} $a" kcrun $n
  KC_ARGS="${KC_ARGS0:-} $b" again $n
}
cnn() { model $1 --model $2 --batch ${3:-32} --dtype bf16 --channels-last --no-values; }
V=(--model vit_b_16 --batch 16 --dtype fp32 --tf32 --no-values)
T5=(--model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph)
Q2=(--model qwen2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph)
killed() { # NAME: `kc run` with KC_ARGS once more on the same capture, killed (SIGKILL) 2 s
  # after its checkpoint is written; then `kc report` on what it left
  local n=$1 d=$out/$1.killed.kc/$1
  mark "kc run killed $n"
  $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.killed.kc --json ${KC_ARGS:-} > $out/$n.killed.run.json 2> $out/$n.killed.run.log &
  local pid=$! i=0
  while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null && ! grep -q "results so far written" $out/$n.killed.run.log; do
    sleep 0.5; i=$((i+1)); done
  sleep 2; kill -9 $pid 2>/dev/null; wait $pid; echo "$n killed rc=$? after $((i/2)) s" >> $out/summary.txt
  grep "results so far" $out/$n.killed.run.log >> $out/summary.txt
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --reference $out/reference.json \
    --reference-entry $n -o $d/report > $out/$n.killed.report.log 2>&1
  echo "killed report rc=$?" >> $out/summary.txt
  grep -m1 "Not a whole run" $d/report/report.md >> $out/summary.txt
  rm -f $d/plan.kcplan $d/*.kcir $d/report/replay.trace.json
}
case $P in
a) # kc-r (session 34, 1321f05; session 33's part n): the look's margin holds the unit's
   # census (eeb1148) and windows on the counter's period only where it keeps one
   # (db4cf4d), neither yet measured: kc run's time on ResNeXt-50's 110-unit step (session
   # 33 call 4: 60.9 s, 22 units at four ticks) and Wide ResNet-50-2's (64.6 s), and T5's
   # 112-unit graph (session 31: +2.2 / -3.1 %)
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model wide_resnet50_train --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model t5_graph "${T5[@]}" ;;
b) # kc-r (session 34): the chart's oldest energy misses answered again with today's kc
   # (session 20: RegNetY-3.2GF in TF32 +5.3 %, Swin-T's step +4.5 %, ConvNeXt-S's step
   # +6.0 %; since then duty-cycle energy, the values at the steps, windows on the period)
   model regnety_tf32 --model regnet_y_3_2gf --batch 32 --dtype fp32 --tf32 --channels-last --no-values
   model swin_t_train --model swin_t --batch 32 --dtype bf16 --mode train --optimizer adamw-fused
   model convnext_small_train --model convnext_small --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused ;;
c) # kc-r (session 34): the chart's under-drawing misses answered again (LLaMA's eager step,
   # session 19: -3.7 %; BERT's graph, session 21: -3.4 %; Swin-B, session 31: -4.1 %)
   model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph
   model swin_b --model swin_b --batch 8 --dtype bf16 --no-values ;;
d) # kc-r (session 34): ConvNeXt-S's step (call 2: +0.5 / +5.8 %, the chart's largest energy
   # miss) with the diagnostic --lead-in-units: each unit also after the model's steps that
   # lead up to it (back to a shared place), less those alone; session 25 put a third of
   # ResNeXt-50's overdraw then (+8.7 %) on its units' producers (-4.3 % in energy)
   KC_ARGS="--lead-in-units" model convnext_small_train --model convnext_small --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused ;;
e) # Prepared in session 34 (not run; session 35 ran part g instead, at the share): --lead-in-units on two
   # more of the chart's energy misses, to see whether the units after their producers
   # answer energy better across families (session 34 call 4: ConvNeXt-S's step +4.5 ->
   # +1.9 %; session 25: ResNeXt-50's step +8.7 -> +5.8, T5's graph -2.8 -> -1.5): Wide
   # ResNet-50-2's step (its capped units left out) and Swin-B (which under-draws);
   # with --round-energy besides, so that `kc report --switch-energy-from-round` can price
   # the terms' time at the round's own energy on the same results
   KC_ARGS="--lead-in-units --round-energy" model wide_resnet50_train --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   KC_ARGS="--lead-in-units --round-energy" model swin_b --model swin_b --batch 8 --dtype bf16 --no-values ;;
f) # Prepared in session 34, run in session 35 (call 1, kc-s): the lead-ins on only the units that carry the
   # energy (--lead-in-share, 380038a: ConvNeXt-S's 40 of 154 units at 0.84 held all of
   # call 4's saving): T5's 202-unit step at 0.9, and ConvNeXt-S's step at 0.85 against
   # call 4's every unit (-2.4 %, the diagnostic 112 s); needs kc-s (c4895f5) or later,
   # whose graph runs also take their windows on their series' period (check it reads
   # within 0.05 % of 100 ms in the notes)
   KC_ARGS="--lead-in-units --lead-in-share 0.85" model convnext_small_train --model convnext_small --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused
   KC_ARGS="--lead-in-units --lead-in-share 0.9 --round-energy" model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused ;;
g) # Session 35 (call 2, kc-s): the lead-ins limited by share as a candidate default (part f: ConvNeXt-S's
   # step +5.8 -> +3.5 %, T5's step +4.3 -> -0.4 % in energy at 0.85 and 0.9) on three more
   # of the chart's energy misses, two of them under the model: Wide ResNet-50-2's step
   # (+3.1 %), Swin-B (-3.7 %), BERT's graph (-4.4 %); --round-energy besides
   KC_ARGS="--lead-in-units --lead-in-share 0.9 --round-energy" model wide_resnet50_train --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   KC_ARGS="--lead-in-units --lead-in-share 0.9 --round-energy" model swin_b --model swin_b --batch 8 --dtype bf16 --no-values
   KC_ARGS="--lead-in-units --lead-in-share 0.9 --round-energy" model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph ;;
h) # Session 35 (call 3, kc-s): the lead-ins limited by share (0.9), the candidate default, checked on four
   # of the chart's models that did not enter the decision (parts f, g): ResNeXt-50's step
   # (+3.7 %), RegNetY in TF32 (+3.7 %), LLaMA's eager step (-3.1 %), Qwen2's step graph
   # (-2.7 %)
   L="--lead-in-units --lead-in-share 0.9"
   KC_ARGS="$L" model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   KC_ARGS="$L" model regnety_tf32 --model regnet_y_3_2gf --batch 32 --dtype fp32 --tf32 --channels-last --no-values
   KC_ARGS="$L" model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   KC_ARGS="$L" model qwen2_train_graph --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach --cuda-graph ;;
i) # Prepared in session 35 (session 36 ran it as part l, without the second answers; needs kc-t, 2edc3a5 or later, whose
   # kc run measures the units' producers by default and keeps a long series' ticks): the
   # default on chart models not yet answered with the term (Swin-T's step +3.0 %, T5's
   # graph -2.6 %, Qwen2's eager step -3.3 %), each answered again on the same capture with
   # --no-lead-in-units (the term's cost in kc run's time, and its A/B)
   abflags swin_t_train "" "--no-lead-in-units" --model swin_t --batch 32 --dtype bf16 --mode train --optimizer adamw-fused
   abflags t5_graph "" "--no-lead-in-units" "${T5[@]}"
   abflags qwen2_train "" "--no-lead-in-units" --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach ;;
j) # Prepared in session 35 (session 36 ran it as part m, with kc-u): the default on inference models the chart holds
   # from sessions 31 and 22 (EfficientNet-V2-S, ResNet-50, ViT-B/16 in TF32), and Mixtral's
   # decode graph (a replay that misses the model in time)
   model effnet_v2_s --model efficientnet_v2_s --batch 32 --dtype bf16 --channels-last --no-values
   model resnet50 --model resnet50 --batch 32 --dtype bf16 --channels-last --no-values
   model vit_b_16_tf32 "${V[@]}"
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
k) # Session 36 (kc-u): the units held down by the power cap alone, measured after their
   # lead-ins at a duty cycle as their energy alone was (session 35 left them out: their
   # energy alone stood): ConvNeXt-S's step (+3.6 %, 7 capped units), Wide ResNet-50-2's
   # step (+3.02 %, 19), and BERT's graph (-3.7 %; its capped units taken at the cap would
   # have read -6.5 %)
   model convnext_small_train --model convnext_small --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused
   model wide_resnet50_train --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph ;;
l) # Session 36 (kc-u): session 35's part i without the second answers (the term's cost is
   # in each report's phases): chart models not yet answered with the producers' term,
   # Swin-T's step (+3.0 %), T5's graph (+2.2 / -2.6 %), Qwen2's eager step (-3.3 %)
   model swin_t_train --model swin_t --batch 32 --dtype bf16 --mode train --optimizer adamw-fused
   model t5_graph "${T5[@]}"
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach ;;
m) # Session 36 (kc-u): session 35's part j, the default on inference models the chart holds
   # from sessions 31 and 22, and Mixtral's decode graph (a replay that misses the model in
   # time, +5.4 %)
   model effnet_v2_s --model efficientnet_v2_s --batch 32 --dtype bf16 --channels-last --no-values
   model resnet50 --model resnet50 --batch 32 --dtype bf16 --channels-last --no-values
   model vit_b_16_tf32 "${V[@]}"
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
n) # Session 36 (kc-u): part l's Qwen2 eager step, which part l's budget left out
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach ;;
o) # Prepared in session 36 for the next session (not run; needs kc-v, 05cbd45 or later,
   # whose graph runs take their series' period from the ticks' lower envelope): Swin-T's
   # step (327 units; session 36's kc run of it ran past 230 s: give RUN_TIMEOUT=330 or
   # more, alone in its call), and the chart's energy misses answered again, LLaMA's eager
   # step (-4.2 %) and EfficientNet-V2-S (-3.5 %); check each graph run's series period
   # in its notes (the envelope read 99.99-100.02 ms on session 36's ticks)
   model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model effnet_v2_s --model efficientnet_v2_s --batch 32 --dtype bf16 --channels-last --no-values ;;
p) # Prepared in session 36 (not run; kc-v): Swin-T's step alone in a call
   model swin_t_train --model swin_t --batch 32 --dtype bf16 --mode train --optimizer adamw-fused ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md $out/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
