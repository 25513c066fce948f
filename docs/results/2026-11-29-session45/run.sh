#!/bin/bash
# Session 45 (session 44's run.sh, its parts replaced by this session's). PART names a set
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
a) # kc-zm (session 45, HEAD d66f3c1; BERT's kept plan left out of call 1's tarball, 7.1 MB: the round's values check keeping only the units' reads
   # in scratch, 7ceb579, and its census through isolated::census, a949cdb; neither run on a
   # GPU before): Qwen3-MoE's training step graph (+6.2 % in session 44, where the check's
   # copy of the 30.7 GB image did not fit), then BERT's training step graph (its round ran
   # 0.57 % of its places non-finite in session 21), each also reported as recorded
   PLANS=1 KC_ARGS="--lead-in-kernels" RUN_TIMEOUT=200 model qwen3_moe_train_graph --model qwen3_moe --layers 2 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   [ -d $out/qwen3_moe_train_graph.kc ] && recorded qwen3_moe_train_graph
   PLANS=1 KC_ARGS="--lead-in-kernels" RUN_TIMEOUT=150 model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   [ -d $out/bert_train_graph.kc ] && recorded bert_train_graph ;;
b) # kc-zn (session 45): a unit whose reads do not fit in scratch beside the image is
   # recorded in place, first (one launch over what the round left, one over the model's
   # values, no copies); the rest keep their reads in scratch while they fit. Call 1's
   # Qwen3-MoE step graph left 44 units as recorded (15 GB of reads, its fused AdamW's
   # most of it) and read +6.0 %. Then two models new to the chart: Mistral's training step
   # and BLOOM's, each traced as its CUDA graph
   PLANS=1 KC_ARGS="--lead-in-kernels" RUN_TIMEOUT=200 model qwen3_moe_train_graph --model qwen3_moe --layers 2 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   [ -d $out/qwen3_moe_train_graph.kc ] && recorded qwen3_moe_train_graph
   KC_ARGS="--lead-in-kernels" RUN_TIMEOUT=150 model mistral_train_graph --model mistral --layers 2 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   [ -d $out/mistral_train_graph.kc ] && recorded mistral_train_graph
   KC_ARGS="--lead-in-kernels" RUN_TIMEOUT=150 model bloom_train_graph --model bloom --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   [ -d $out/bloom_train_graph.kc ] && recorded bloom_train_graph ;;
c) # kc-zo (session 45): a unit whose kernels ran at least 5 % and 20 us longer in the round
   # than alone is recorded alone over the values the round left and over the model's too,
   # whatever the non-finite share at its places (call 2: BLOOM's fused AdamW ran 2027 us in
   # the round, 1519 alone, and was not checked; +4.1 %). BLOOM's training step graph again,
   # then Mistral's (call 2's capture failed: capture.py now passes use_cache=False to a
   # training step, whose sliding-window cache copied a host tensor inside the capture)
   PLANS=1 KC_ARGS="--lead-in-kernels" RUN_TIMEOUT=150 model bloom_train_graph --model bloom --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   [ -d $out/bloom_train_graph.kc ] && recorded bloom_train_graph
   KC_ARGS="--lead-in-kernels" RUN_TIMEOUT=170 model mistral_train_graph --model mistral --layers 2 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   [ -d $out/mistral_train_graph.kc ] && recorded mistral_train_graph ;;
d) # kc-zo (session 45), a diagnostic: BLOOM's fused AdamW runs about 2040 us in the round,
   # 1530 alone, after its lead-ins and over the round's values alike (calls 2 and 3). Its
   # training step graph is answered time only (--no-energy), its plan kept, and the
   # isolated pass run again (time only) with the round as it runs (--round-plain: no
   # copy of the image at each launch), with three rounds at other runs of each unit
   # (--round-runs 3), and without lead-ins (--round-no-lead-in)
   KEEP=1 NO_REMEASURE=1 KC_ARGS="--no-energy" RUN_TIMEOUT=120 model bloom_train_graph --model bloom --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   p=$out/bloom_train_graph.kc/bloom_train_graph/plan.kcplan
   for v in plain:--round-plain runs3:"--round-runs 3" nolead:--round-no-lead-in; do
     [ -f $p ] || break
     mark "variant ${v%%:*}"; s=$(date +%s%N)
     timeout 120 $kc exec $p --isolated --verify --no-energy ${v#*:} -o $out/variant.${v%%:*}.json --json > $out/variant.${v%%:*}.log 2>&1
     echo "variant ${v%%:*} rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
   done
   rm -f $p $out/bloom_train_graph.kc/bloom_train_graph/*.kcir ;;
e) # kc-zo (session 45), the same diagnostic as part d on Qwen3-MoE's and Mixtral's training
   # step graphs (their fused AdamWs ran 14 % and 16 % longer in the round than alone):
   # each answered time only, its plan kept, and the isolated pass run again without
   # lead-ins (--round-no-lead-in)
   variant() { # NAME: the kept plan's isolated pass again, time only, without lead-ins
     local p=$out/$1.kc/$1/plan.kcplan s=$(date +%s%N)
     [ -f $p ] || return 0
     mark "variant nolead $1"
     timeout 150 $kc exec $p --isolated --verify --no-energy --round-no-lead-in -o $out/$1.nolead.json --json > $out/$1.nolead.log 2>&1
     echo "variant nolead $1 rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     rm -f $p $out/$1.kc/$1/*.kcir
   }
   KEEP=1 NO_REMEASURE=1 KC_ARGS="--no-energy" RUN_TIMEOUT=150 model qwen3_moe_train_graph --model qwen3_moe --layers 2 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   variant qwen3_moe_train_graph
   KEEP=1 NO_REMEASURE=1 KC_ARGS="--no-energy" RUN_TIMEOUT=150 model mixtral_train_graph --model mixtral --layers 2 --hidden 2048 --heads 16 --kv-heads 8 --intermediate 5632 --vocab 32000 --batch 4 --seq 512 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   variant mixtral_train_graph ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md $out/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
