#!/bin/bash
# Session 22. PART names a set of models; each is captured, answered by `kc run --reference`
# (the round's kernels now recorded over launches back to back, the first from idle left
# out), the model measured again (`--remeasure`), and reported; PART a keeps each plan
# (plans/), PART b replays the H100 plans (carried in .device/h100plans) after each model
# is measured on this GPU (kc's cross-GPU answer). nvidia-smi samples clocks and power every
# 200 ms throughout (smi.csv). Run from the repository root, binary in .device/bin (KC=).
# BUDGET (s) skips models that would start after it.
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
a) # kc-i on the H100 (PLANS=1): the models whose round terms missed in session 21 (ViT's
   # gap, T5's, ConvNeXt-T's and Qwen2's slower kernels, BERT's split), the round's kernels
   # recorded over launches back to back; the plans kept for the H200
   model vit_b_16_tf32 "${V[@]}"
   model t5_graph "${T5[@]}"
   model qwen2_decode_graph "${Q2[@]}"
   model convnext_tiny_compiled --model convnext_tiny --batch 32 --dtype bf16 --channels-last --compile --no-values
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph ;;
b) # the H200: each model measured here and answered by kc run, then its H100 plan (call 1)
   # replayed here against the same measurement of the model
   model vit_b_16_tf32 "${V[@]}"; cross vit_b_16_tf32
   model t5_graph "${T5[@]}"; cross t5_graph
   model qwen2_decode_graph "${Q2[@]}"; cross qwen2_decode_graph ;;
c) # kc-i on the H100, the rest of session 21's eight: BERT's graphs (inference, a training
   # step with fused AdamW), a vision training step (fused Adam), an MoE decode graph
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph
   model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
d) # kc-i on the H100, two families its H100 table lacked: a windowed vision transformer and
   # another serving decode graph
   model swin_t --model swin_t --batch 32 --dtype bf16 --no-values
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md $out/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
