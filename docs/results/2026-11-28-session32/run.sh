#!/bin/bash
# Session 32 (session 31's run.sh; part e prepared in session 31, run in session 32; calls 1 and 3 ran a byte-identical copy of session 31's mixtral_offsets_probe.py from this folder, which was removed after). PART names a set of models; each is
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
a) # kc-k on the H200: the round at kc's default cycles a launch (ten times the restoring
   # copy's time, at least 2) against 12 cycles, on one capture each (session 30's H100
   # compiled ConvNeXt-T: -3.8 % at 3 cycles, -1.5 % at 12); the order swapped on the second
   abflags convnext_tiny_compiled "" "--round-cycles 12" --model convnext_tiny --batch 32 --dtype bf16 --channels-last --compile --no-values
   abflags resnet50 "--round-cycles 12" "" --model resnet50 --batch 32 --dtype bf16 --channels-last --no-values ;;
b) # kc-k on the H200: as part a, ViT-L/16 (the H200 chart's -2.9 %, the model at the power
   # cap; 16 cycles a launch by default) against 32 cycles, then EfficientNet-V2-S (2 cycles)
   # against 12
   abflags vit_l_16 "" "--round-cycles 32" --model vit_l_16 --batch 16 --dtype bf16 --no-values
   abflags effnet_v2_s "--round-cycles 12" "" --model efficientnet_v2_s --batch 32 --dtype bf16 --channels-last --no-values ;;
c) # kc-k on the H200, kc's defaults: the H200 chart's misses answered again with this build
   # (their answers were sessions 20-22's): T5's graph (+2.5 %), Mixtral's decode graph
   # (+5.4 %) and ResNeXt-50's training step with fused Adam (energy +5.1 %)
   model t5_graph "${T5[@]}"
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused ;;
d) # kc-k on the H200, kc's defaults: more of the H200 chart's misses answered again with
   # this build: Qwen2's training step (time -2.5 %, energy -4.7 %, session 19), Swin-B
   # (energy -4.8 %, session 18) and BERT's inference graph (energy -3.3 %, session 21)
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
   model swin_b --model swin_b --batch 8 --dtype bf16 --no-values
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph ;;
e) # Prepared in session 31 for the next session (not yet run): Mixtral's offsets in the
   # model's graph against an eager run's, its grouped GEMMs in the graph and alone
   # (mixtral_offsets_probe.py); then the Hugging Face training steps whose reference
   # graphs ran more GPU activities than their eager traces (Qwen2 502 against 485, LLaMA
   # 320 against 307), traced as the graphs themselves
   mark "mixtral_offsets_probe"
   $py docs/results/2026-11-28-session31/mixtral_offsets_probe.py > $out/mixtral_offsets_probe.txt 2>&1
   model qwen2_train_graph --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach --cuda-graph
   model llama_train_graph --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph ;;
f) # kc-m (session 32): the units that drew past the power limit alone timed at their duty
   # cycle where the round is measured against them (TransitionsSummary
   # alone_at_model_clock), the spin's own time taken off their energy: Qwen2's training
   # step as a graph (part e: -3.7 / -3.0 %), eager (session 31: -3.5 / -2.2 %) and
   # ResNeXt-50's step with fused Adam (session 31: -0.4 / +5.6 %)
   model qwen2_train_graph --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach --cuda-graph
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused ;;
g) # kc-m (session 32): Mixtral's decode graph captured and answered, then in the same call
   # the probe of its grouped GEMMs (the model's graph in a fresh process), and LLaMA's
   # step as a graph again
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   mark "mixtral_offsets_probe"
   $py docs/results/2026-11-28-session31/mixtral_offsets_probe.py > $out/mixtral_offsets_probe.txt 2>&1
   model llama_train_graph --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph ;;
h) # kc-m (session 32): two more training steps with units at the power cap, answered
   # with the duty cycle's time: Wide ResNet-50-2's step with fused Adam (session 24) and
   # T5's step with fused AdamW (session 20)
   model wide_resnet50_train --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md $out/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
