#!/bin/bash
# Session 52 (session 51's run.sh; its parts a-u are sessions 49-51's record, v onward this session's). PART names a set
# of models; each is
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
oldplan() { # NAME: the plan session 40's kc built from call 1's capture of NAME (library forks on
  # the library's streams), replayed as kc's graph only, in the same call as the model's
  # measurement, beside the plan this build makes (library forks on the calling stream)
  local n=$1 p=.device/oldplans/$1.kcplan s=$(date +%s%N)
  [ -f $p.xz ] || { mark "no old plan for $n"; return 0; }
  xz -dkf $p.xz
  mark "old plan $n"
  timeout 100 $kc exec $p --verify --energy-window 0.5 --energy-repeats 3 -o $out/$n.oldplan.graph.json --json > $out/$n.oldplan.log 2>&1
  echo "oldplan $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
}
lead4() { # NAME: the isolated pass once more on the plan `kc run` kept (KEEP=1), time only,
  # the round's lead-ins reaching 4 steps back (--round-lead-in-steps 4), reported against
  # the same measurement of the model and the same kc graph
  local n=$1 d=$out/$1.kc/$1 s=$(date +%s%N)
  mark "lead4 $n"
  timeout 150 $kc exec $d/plan.kcplan --isolated --verify --no-energy --round-lead-in-steps 4 \
    -o $d/plan.isolated.lead4.json --json > $out/$n.lead4.log 2>&1
  echo "lead4 $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.lead4.json --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report.lead4 > $out/$n.lead4.report.log 2>&1
  rm -f $d/report.lead4/replay.trace.json
}
sizes() { # NAME: the isolated pass once more on the plan `kc run` kept (KEEP=1), time only,
  # with rounds of 2, 4, 8, ... units (--round-sizes), reported with the switches priced by
  # how far back they reach (--switches-by-reach) against the same measurement of the model
  # and the same kc graph
  local n=$1 d=$out/$1.kc/$1 s=$(date +%s%N)
  mark "sizes $n"
  timeout 200 $kc exec $d/plan.kcplan --isolated --verify --no-energy --round-sizes \
    -o $d/plan.isolated.sizes.json --json > $out/$n.sizes.log 2>&1
  echo "sizes $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.sizes.json --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n --switches-by-reach -o $d/report.sizes > $out/$n.sizes.report.log 2>&1
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.sizes.json --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report.sizes.all > $out/$n.sizes.all.report.log 2>&1
  rm -f $d/report.sizes/replay.trace.json $d/report.sizes.all/replay.trace.json
}
recorded() { # NAME: the same results reported with every unit's kernels in the round as
  # recorded (kc report --round-as-recorded), beside the default that takes alone a unit the
  # round ran over non-finite values where those values changed its kernels
  local n=$1 d=$out/$1.kc/$1
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --reference $out/reference.json \
    --reference-entry $n --round-as-recorded -o $d/report.recorded > $out/$n.recorded.report.log 2>&1
  rm -f $d/report.recorded/replay.trace.json
}
case $P in
a) # kc-zv (session 49). capture.py's decode step put the KV cache back by a crop, so its
   # CUDA graph read a context its capture had freed. The probe: the old step and the new
   # (fff7409), each captured as capture.py does, checked replay against eager and timed;
   # then the decode graphs of the two mixtures of experts (where routing reads that
   # context) and LLaMA's, captured anew and answered in full
   mark "probe mixtral"
   timeout 200 $py docs/results/2026-11-29-session49/decode_cache_probe.py mixtral --layers 2 --batch 16 --seq 256 \
     > $out/probe_mixtral.jsonl 2> $out/probe_mixtral.log
   echo "probe mixtral rc=$?" >> $out/summary.txt; cat $out/probe_mixtral.jsonl >> $out/summary.txt
   PLANS=1 RUN_TIMEOUT=150 model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model llama_decode_graph --model llama --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
b) # kc-zv (session 49). RegNetY-1.6GF's training step (new to the chart; skipped three
   # times for time), answered in full with the copies counted in --verify and the error
   # budget's copy time (9d03586), plan kept; then EfficientNet-B0's kept plan (kc-zs,
   # session 48) measured unit by unit with --verify, time only: the copies each unit
   # launches alone against the trace's (87ff866, first on a GPU)
   PLANS=1 RUN_TIMEOUT=200 model regnety16_train --model regnet_y_1_6gf --batch 64 --dtype bf16 --channels-last --mode train --optimizer adamw-fused
   p=.device/plans/effnet_zs.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
   mark "isolated copies effnet_zs"
   timeout 200 $kc exec $p --isolated --verify --no-energy -o $out/effnet_zs.isolated.json --json > $out/effnet_zs.isolated.log 2>&1
   echo "isolated copies effnet_zs rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt ;;
c) # kc-zv (session 49). The chart's other decode graphs, whose model graphs were measured
   # reading the context their capture freed (capture.py before fff7409), captured anew
   # (each graph now checked against its eager step) and answered in full
   PLANS=1 RUN_TIMEOUT=150 model mistral_decode_graph --model mistral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model qwen2_decode_graph "${Q2[@]}"
   PLANS=1 RUN_TIMEOUT=150 model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model bloom_decode_graph --model bloom --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
d) # kc-zw (session 49): every unit measured in context records its kernels alone by step,
   # so the round's kernels at a unit's counted step are set against that step alone
   # (Qwen3-MoE's decode graph in call 1: its grouped GEMM's first step ran 6 % over its
   # mean over both layers' offsets, read as the round's). The two mixtures of experts'
   # decode graphs, T5's graph (the chart's other time miss by the round) and Mistral's
   # decode graph, captured anew and answered in full
   PLANS=1 RUN_TIMEOUT=150 model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   PLANS=1 RUN_TIMEOUT=170 model t5_graph "${T5[@]}"
   PLANS=1 RUN_TIMEOUT=150 model mistral_decode_graph --model mistral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
e) # kc-zx (session 50; d68549b, written in session 49 and not run there). Tier 3's histc in its functional form (its CUDA out
   # kernel copies): Mixtral's decode graph, whose two histc units ran one copy an
   # invocation the trace does not hold (kc's graph: 36 copies and fills where the trace
   # holds 30); then the two answers of the chart not yet measured with the round by step:
   # Mistral's decode graph (+2.0002 %) and RegNetY-1.6GF's step (+2.1 / +4.2 %)
   PLANS=1 RUN_TIMEOUT=150 model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model mistral_decode_graph --model mistral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   PLANS=1 RUN_TIMEOUT=200 model regnety16_train --model regnet_y_1_6gf --batch 64 --dtype bf16 --channels-last --mode train --optimizer adamw-fused ;;
f) # kc-zx (session 50). The chart's energy misses, answered before the round by step
   # (f13c956), the copies judged per unit and histc's functional form: ResNeXt-101 32x8d
   # (s44), BERT's inference graph (s43), EfficientNet-V2-M (s39), Swin V2-S in fp32 with
   # TF32 (s43), captured anew and answered in full
   PLANS=1 RUN_TIMEOUT=150 model resnext101 --model resnext101_32x8d --batch 16 --dtype bf16 --channels-last --no-values
   PLANS=1 RUN_TIMEOUT=150 model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph
   PLANS=1 RUN_TIMEOUT=200 model effnet_v2_m --model efficientnet_v2_m --batch 16 --dtype bf16 --channels-last --no-values
   PLANS=1 RUN_TIMEOUT=200 model swin_v2_s_tf32 --model swin_v2_s --batch 16 --dtype fp32 --tf32 --no-values ;;
g) # kc-zx (session 50). The chart's time misses among the training steps, answered before
   # the round by step: the step graphs of Qwen3-MoE (s45) and BLOOM (s47), and the eager
   # steps of LLaMA and Qwen2 (s48, where kc's graph missed the model too), captured anew
   # and answered in full
   PLANS=1 RUN_TIMEOUT=200 model qwen3_moe_train_graph --model qwen3_moe --layers 2 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model bloom_train_graph --model bloom --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   PLANS=1 RUN_TIMEOUT=150 model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach ;;
h) # kc-zy (session 50): each launch's first cycle of the restoring round told apart (from
   # the model's values, the results its steps allocate too), and a unit the later cycles
   # ran 5 % and 20 us another time taken at it where the round ran its values away;
   # capture.py's replay check judged by root mean square. Qwen3-MoE's step graph (its
   # fused AdamW reads gradients the round serves from its own pool: +6.0 % in call 3),
   # then BERT's inference graph (its replay check refused it in call 2 for 1.4 % at its
   # largest output), captured anew and answered in full
   PLANS=1 RUN_TIMEOUT=200 model qwen3_moe_train_graph --model qwen3_moe --layers 2 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph ;;
i) # Not run in session 50 (no device time left): the next call, kc-zz (fd1a8fd). The round's
   # first cycles on the training steps whose fused AdamW runs long in the round (BLOOM's
   # step graph, LLaMA's eager step: their rounds' non-finite share rose 0.9 and 0.4
   # points, under the 1-point gate, so the first cycles are recorded but not taken), and
   # Mixtral's step graph (its AdamW taken alone by its values since session 44)
   PLANS=1 RUN_TIMEOUT=150 model bloom_train_graph --model bloom --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   PLANS=1 RUN_TIMEOUT=150 model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   PLANS=1 RUN_TIMEOUT=220 model mixtral_train_graph --model mixtral --layers 2 --hidden 2048 --heads 16 --kv-heads 8 --intermediate 5632 --vocab 32000 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph ;;
j) # Not run in session 50: the two chart answers not yet answered again (Swin V2-S in TF32,
   # s43; Qwen2's eager step, s48)
   PLANS=1 RUN_TIMEOUT=200 model swin_v2_s_tf32 --model swin_v2_s --batch 16 --dtype fp32 --tf32 --no-values
   PLANS=1 RUN_TIMEOUT=150 model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach ;;
k) # Not run in session 50: kc-zz (fd1a8fd's code, `kc exec --by-step-rotated`, in .device/bin). Each
   # unit's record alone by step again from a launch of its steps starting at its second,
   # on the kept plans of the answers whose records at the round's step ran over their
   # timing and the round (at_step_scan.py): ResNeXt-101 32x8d (call 2), RegNetY-1.6GF's
   # step (call 1), T5's graph (session 49, call 4); time only, no model measured (the
   # question is the units' own records: `rotated.py` reads them)
   for n in resnext101_zx regnety16_train_zx t5_graph_zw; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     mark "rotated $n"
     timeout 200 $kc exec $p --isolated --verify --no-energy --by-step-rotated -o $out/$n.rotated.json --json > $out/$n.rotated.log 2>&1
     echo "rotated $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     $py docs/results/2026-11-29-session50/rotated.py $out/$n.rotated.json >> $out/summary.txt 2>&1
   done ;;
s) # Session 51, call 1: the switch probe (switch_probe.py: a kernel's own duration after
   # itself and after other kernels, torch alone), then part k's rotated records.
   mark "switch probe"
   timeout 240 $py docs/results/2026-11-29-session51/switch_probe.py $out/switch_probe.json > $out/switch_probe.log 2>&1
   echo "switch probe rc=$?" >> $out/summary.txt
   tail -8 $out/switch_probe.log >> $out/summary.txt
   for n in resnext101_zx regnety16_train_zx t5_graph_zw; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip rotated $n (time)"; continue; fi
     mark "rotated $n"
     timeout 200 $kc exec $p --isolated --verify --no-energy --by-step-rotated -o $out/$n.rotated.json --json > $out/$n.rotated.log 2>&1
     echo "rotated $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     $py docs/results/2026-11-29-session50/rotated.py $out/$n.rotated.json >> $out/summary.txt 2>&1
   done ;;
t) # Session 51, call 2 (kc-zz1): each unit alone in the model's cache state
   # (`--alone-in-model-cache`) beside kc's graph (--verify), time only, on the kept plans;
   # the reports are made on the development machine.
   for n in ${PLANS_T:-mistral_decode_graph mixtral_decode_graph t5_graph_zw resnext101_zx bert_infer_graph_zy llama_train bloom_train_graph effnet_v2_m regnety16_train_zx qwen3_moe_train_graph_zy}; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip cache $n (time)"; continue; fi
     mark "graph $n"
     timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
     echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     mark "cache $n"; s=$(date +%s%N)
     timeout 200 $kc exec $p --isolated --verify --no-energy --no-parts --no-lead-in-units --alone-in-model-cache -o $out/$n.iso.json --json > $out/$n.iso.log 2>&1
     echo "cache $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
   done ;;
u) # Session 51, call 8 (kc-zz6): a family new to the chart, answered by kc run with every
   # unit in the model's cache state (by default)
   PLANS=1 RUN_TIMEOUT=150 model squeezenet --model squeezenet1_1 --batch 64 --dtype bf16 --channels-last --no-values ;;
v) # Session 52, call 1 (kc-zz7): part t again on the same kept plans, with the record in
   # the model's cache state counting each read's distance in distinct bytes piece by piece
   # (reads_at_distinct), touching the operands libtorch holds outside the image just
   # before each invocation, and --verify's in-context durations the mean of three
   # launches back to back after the first (not one launch from an idle GPU)
   for n in ${PLANS_T:-mistral_decode_graph mixtral_decode_graph t5_graph_zw resnext101_zx bert_infer_graph_zy llama_train bloom_train_graph effnet_v2_m regnety16_train_zx qwen3_moe_train_graph_zy}; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip cache $n (time)"; continue; fi
     mark "graph $n"
     timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
     echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     mark "cache $n"; s=$(date +%s%N)
     timeout 200 $kc exec $p --isolated --verify --no-energy --no-parts --no-lead-in-units -o $out/$n.iso.json --json > $out/$n.iso.log 2>&1
     echo "cache $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
   done ;;
w) # Session 52, call 2 (kc-zz8): the record in the model's cache state five ways in one
   # call, on kept plans, beside kc's graph (--verify, the mean of three launches back to
   # back): as kc records it now (twice, for the call's own spread), the operands libtorch
   # holds outside the image left evicted, that and the distances summed (session 51's
   # way), and kc's way with a one-sector touch just before each invocation (is a unit's
   # record moved by the kernel just before it?)
   for n in ${PLANS_W:-mistral_decode_graph t5_graph_zw llama_train regnety16_train_zx}; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip ways $n (time)"; continue; fi
     mark "graph $n"
     timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
     echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     for way in "kc:" "kc2:" "held_evicted:--model-cache-held-evicted" \
                "s51:--model-cache-held-evicted --model-cache-distance summed" \
                "small_pred:--model-cache-small-predecessor"; do
       w=${way%%:*}; flags=${way#*:}
       mark "cache $n $w"; s=$(date +%s%N)
       timeout 120 $kc exec $p --isolated --verify --no-energy --no-parts --no-lead-in-units $flags \
         -o $out/$n.iso.$w.json --json > $out/$n.iso.$w.log 2>&1
       echo "cache $n $w rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     done
   done ;;
x) # Session 52, call 3 (kc-zz9): part v again with kc's defaults as they now stand: the
   # distances summed (call 2: the distinct count 0.1-0.6 points further from kc's graph on
   # four models of four) and the operands libtorch holds outside the image touched where
   # the plan binds them to a step less than L2 of bytes before (the rest left evicted)
   for n in ${PLANS_T:-mistral_decode_graph mixtral_decode_graph t5_graph_zw resnext101_zx bert_infer_graph_zy llama_train bloom_train_graph effnet_v2_m regnety16_train_zx qwen3_moe_train_graph_zy}; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip cache $n (time)"; continue; fi
     mark "graph $n"
     timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
     echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     mark "cache $n"; s=$(date +%s%N)
     timeout 200 $kc exec $p --isolated --verify --no-energy --no-parts --no-lead-in-units -o $out/$n.iso.json --json > $out/$n.iso.log 2>&1
     echo "cache $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
   done ;;
y) # Session 52, call 4 (kc-zz10): part x again, a held operand counted as made once an
   # iteration where the executor keeps recorded values in place of the result the plan
   # binds it to (takes_bound_result: Mistral's mask `bitwise_and`s, T5's `where`s and
   # `copy_`, LLaMA's `cumsum` and `all` were touched as near in call 3)
   for n in ${PLANS_T:-mistral_decode_graph mixtral_decode_graph t5_graph_zw resnext101_zx bert_infer_graph_zy llama_train bloom_train_graph effnet_v2_m regnety16_train_zx qwen3_moe_train_graph_zy}; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip cache $n (time)"; continue; fi
     mark "graph $n"
     timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
     echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     mark "cache $n"; s=$(date +%s%N)
     timeout 200 $kc exec $p --isolated --verify --no-energy --no-parts --no-lead-in-units -o $out/$n.iso.json --json > $out/$n.iso.log 2>&1
     echo "cache $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
   done ;;
z) # Session 52, call 5 (kc-zz10): two families new to the chart, answered by kc run (every
   # unit also in the model's cache state, kc's defaults of call 4): MViT-V2-S, a video
   # transformer with pooled attention, and Qwen3-MoE's prefill as a CUDA graph
   PLANS=1 RUN_TIMEOUT=170 model mvit_v2_s --model mvit_v2_s --batch 4 --dtype bf16 --no-values
   PLANS=1 RUN_TIMEOUT=170 model qwen3_moe_prefill_graph --model qwen3_moe --layers 2 --batch 4 --seq 512 --dtype bf16 --cuda-graph ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md $out/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
# TRACES names models whose Kineto trace and ET come back apart, in pieces of 15 MB.
if [ -n "${TRACES:-}" ]; then
  (cd $OUT && tar cf - $(for n in $TRACES; do ls $P/$n.pt.trace.json.gz $P/$n.et.json.gz 2>/dev/null; done) | split -b 15M - $P.traces.tar.)
fi
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
