#!/bin/bash
# Session 54. PART names a measurement on session 51's kept plans (.device/plans), time
# only, no model measured (the question is each unit's own record against its kernels in
# kc's graph, both from this call), and models answered in full (`model`). nvidia-smi samples clocks and power every 200 ms
# (smi.csv). Run from the repository root, binary in .device/bin (KC=). BUDGET (s) skips
# plans that would start after it. Results go to $OUT/PART.txz.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:?binary in .device/bin}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC
P=${1:?part}; out=$OUT/$P; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version,power.limit --format=csv > $out/gpu.csv 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 200 > $out/smi.csv 2>&1 & SMI=$!
T0=$(date +%s)
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $out/timeline.txt; }
ALL="mistral_decode_graph mixtral_decode_graph t5_graph_zw resnext101_zx bert_infer_graph_zy llama_train bloom_train_graph effnet_v2_m regnety16_train_zx qwen3_moe_train_graph_zy"
# ways PLANS WAY...: per plan, kc's graph (--verify, the mean of three launches back to
# back), then the isolated pass once per WAY ("name:flags"), each unit recorded in the
# model's cache state beside it
ways() {
  local plans=$1; shift
  for n in $plans; do
    p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
    if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; continue; fi
    mark "graph $n"
    timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
    echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
    for way in "$@"; do
      w=${way%%:*}; flags=${way#*:}
      mark "cache $n $w"; s=$(date +%s%N)
      timeout 150 $kc exec $p --isolated --verify --no-energy --no-parts --no-lead-in-units $flags \
        -o $out/$n.iso.$w.json --json > $out/$n.iso.$w.log 2>&1
      echo "cache $n $w rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
    done
  done
}
# model NAME CAPTURE-ARGS: captured, answered by `kc run --reference` (every unit also in
# the model's cache state, kc's defaults), the model measured again (--remeasure) in the
# same call, and reported (session 52's run.sh, its `model` and `kcrun`)
py=/opt/torch/.venv/bin/python here=$PWD
model() {
  local n=$1; shift
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; return; fi
  args=("$@"); name=$n
  mark "capture $n"
  . tools/capture_inputs.sh "$@"
  mark "kc run $n"; local s=$(date +%s%N)
  timeout ${RUN_TIMEOUT:-200} $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.kc --json > $out/$n.run.json 2> $out/$n.run.log
  echo "$n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  local d=$out/$n.kc/$n
  mark "remeasure $n"
  $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report > $out/$n.report.log 2>&1
  mkdir -p $out/plans && xz -3 -c $d/plan.kcplan > $out/plans/$n.kcplan.xz
  rm -f $d/plan.kcplan $d/*.kcir $d/report/replay.trace.json $out/*.pt.trace.json.gz $out/*.et.json.gz $out/*.values.bin
}
case $P in
a) # Session 54, call 1 (session 53's part f, not run there): do the decode graphs' mask
   # units run as in kc's graph when their producer's kernel runs just before them? Session
   # 50's round ran Mistral's mask `add` and `sub` within 2.1 % of kc's graph, where every
   # record alone runs them 14-21 % under. Each plan's isolated pass with every unit also
   # measured after its lead-ins (the model's steps leading up to each invocation) and
   # those launches recorded (--lead-in-share 1 --lead-in-kernels: after_lead_in.kernels,
   # `after_lead_in_vs_in_context_pct` in the report), energy on (the lead-ins' windows
   # need it), beside kc's graph
   for n in ${PLANS_F:-mistral_decode_graph gpt2_decode_graph mixtral_decode_graph}; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; continue; fi
     mark "graph $n"
     timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
     echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     mark "lead-ins $n"; s=$(date +%s%N)
     timeout 200 $kc exec $p --isolated --verify --no-parts --lead-in-share 1 --lead-in-kernels \
       --energy-window 0.05 --energy-repeats 2 -o $out/$n.iso.lead.json --json > $out/$n.iso.lead.log 2>&1
     echo "lead-ins $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
   done ;;
b) # Session 54, call 2 (kc-zz16): the decode graphs' mask units read operands libtorch
   # holds that their producer, a step just before, wrote; the record touches them as read
   # and they run 14-25 % under kc's graph, where left evicted they ran as there (session
   # 52). Touched as written instead, as their producer left them
   # (--model-cache-held-written)? T5's and LLaMA's held masks and buckets, which run as in
   # kc's graph touched as read, beside them
   ways "${PLANS_B:-mistral_decode_graph gpt2_decode_graph mixtral_decode_graph t5_graph_zw llama_train}" "far:" "heldw:--model-cache-held-written" ;;
c) # Session 54, call 3 (kc-zz17): call 1's lead-in pass read its units' integer and
   # boolean bound reads from their stand-ins (the model's values), so the mask units read
   # no producer's result there. Again with them read from the results their lead-ins
   # computed, as kc's graph reads them (--lead-in-reads-from-producers): does a mask
   # unit's read of the result its producer just wrote run as in kc's graph?
   for n in ${PLANS_C:-gpt2_decode_graph mistral_decode_graph}; do
     p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
     if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; continue; fi
     mark "graph $n"
     timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
     echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
     mark "lead-ins $n"; s=$(date +%s%N)
     timeout 200 $kc exec $p --isolated --verify --no-parts --lead-in-share 1 --lead-in-kernels --lead-in-reads-from-producers \
       --energy-window 0.05 --energy-repeats 2 -o $out/$n.iso.lead.json --json > $out/$n.iso.lead.log 2>&1
     echo "lead-ins $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
   done ;;
d) # Session 54, call 4 (kc-zz18): do the decode graphs' mask units, one-block kernels
   # reading what a one-block kernel just before them wrote, run 14-25 % under kc's graph
   # because the record's touch leaves those lines where the unit's SM reads them nearer
   # than the producer's do (H200's L2 is two partitions)? The held operands touched from
   # SMs 0-65 only, from SMs 66-131 only, and from SM 0 alone
   # (--model-cache-held-on-sms LO:HI, by %smid), beside kc's default
   ways "${PLANS_D:-gpt2_decode_graph mistral_decode_graph mixtral_decode_graph}" "far:" "smA:--model-cache-held-on-sms 0:66" \
     "smB:--model-cache-held-on-sms 66:132" "sm0:--model-cache-held-on-sms 0:1" ;;
e) # Session 54, call 5 (kc-zz19): after its lead-ins (call 1) Mistral's silu and mul
   # after the MLP's GEMMs ran as in kc's graph (-15 -> -4 %) and the rotary neg units
   # came down from +15 % (units run warm there, L2 never turned over). Each unit recorded
   # in the model's cache state with the model's steps leading up to each invocation run
   # after L2 is turned over and before the unit (--model-cache-lead-ins, its kernels
   # those after a marker kernel), beside kc's default, on the ten kept plans
   ways "${PLANS_E:-$ALL}" "far:" "lead:--model-cache-lead-ins" ;;
f) # Session 54, call 6 (kc-zz20): call 5's record with lead-ins read its units' integer
   # and boolean operands from the lead-ins' results, and T5's and BERT's gathers ran out of
   # bounds (an in-place lead-in run before every invocation bumps its indices again each
   # time). Again with those reads on their stand-ins (the model's values), as the units
   # after their lead-ins read them, on the ten kept plans
   ways "${PLANS_F:-$ALL}" "far:" "lead:--model-cache-lead-ins" ;;
g) # Not run in session 54 (its device time spent): the next call. The record with the
   # lead-ins (--model-cache-lead-ins, better on 8 of 9 kept plans in call 6) on the five
   # models answered afresh in session 53, whose plans the record was not developed on
   # (.device/plans from session 53's calls 2 and 4), and with the lead-ins' integer and
   # boolean results read where no lead-in writes integers in place
   # (--model-cache-lead-in-reads-from-producers: the mask units, call 5, without T5's
   # and BERT's out-of-bounds gathers), beside kc's default; then T5's and BERT's graphs
   # and Mistral's decode graph again with it
   ways "${PLANS_G:-gpt2_decode_graph qwen2_decode_graph qwen3_moe_decode_graph vit_b_16_tf32 convnext_tiny_train}" \
     "far:" "lead:--model-cache-lead-ins" "leadp:--model-cache-lead-ins --model-cache-lead-in-reads-from-producers"
   ways "${PLANS_G2:-t5_graph_zw bert_infer_graph_zy mistral_decode_graph}" "leadp:--model-cache-lead-ins --model-cache-lead-in-reads-from-producers" ;;
esac
kill $SMI 2>/dev/null
cat $out/summary.txt $out/timeline.txt
cd $OUT && tar cJf $P.txz $P && rm -rf $P
