#!/bin/bash
# Session 20. PART names a set of models; each is captured, answered by `kc run --reference`
# (the pairs and the round now read integer and boolean results as the units alone did:
# the model's values), the model measured again (`--remeasure`), and reported. nvidia-smi samples clocks and power every
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
  [ -z "${KEEP:-}" ] && rm -f $d/plan.kcplan $d/*.kcir
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
case $P in
a) # the final build (kc-d): T5's graph and training step with their recorded Python numbers (they
   # faulted in session 19 with the integer values), the MoE decode graphs with the final values rule
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
b) # Mixtral's decode graph with the final values rule, and three families kc was not tuned on:
   # fp32 with TF32 matmuls and convolutions (RegNetY-3.2GF, ViT-B/16), a vision training step
   # with fused Adam (ResNeXt-50)
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model regnety_tf32 --model regnet_y_3_2gf --batch 32 --dtype fp32 --tf32 --channels-last --no-values
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model vit_b_16_tf32 --model vit_b_16 --batch 16 --dtype fp32 --tf32 --no-values ;;
c) # The energy misses of session 20's calls 1-2 (the units alone drew 5-7 % more than kc's graph
   # in the same time): every unit's energy also at a duty cycle (KC_ARGS=--duty-energy-all)
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model regnety_tf32 --model regnet_y_3_2gf --batch 32 --dtype fp32 --tf32 --channels-last --no-values ;;
d) # Whether the units alone read from DRAM what the model reads from L2 (its producer just
   # wrote it): every unit measured warm (KC_ARGS="--cache warm": each invocation reuses the
   # same buffers), its Σ against kc's graph in the same call; T5's graph as the control
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model regnety_tf32 --model regnet_y_3_2gf --batch 32 --dtype fp32 --tf32 --channels-last --no-values ;;
e) # Families kc was not tuned on: an encoder-only training step (BERT, fused AdamW), a vision
   # transformer with windows in training (Swin-T, fused AdamW), a GQA serving decode graph
   # (Qwen2), a compiled ConvNeXt-T (Inductor's Triton kernels)
   model bert_train --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model swin_t_train --model swin_t --batch 32 --dtype bf16 --mode train --optimizer adamw-fused
   model qwen2_decode_graph --model qwen2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model convnext_tiny_compiled --model convnext_tiny --batch 32 --dtype bf16 --channels-last --compile --no-values ;;
f) # BERT's training step ended kc by SIGSEGV at its graph's third warm-up launch (call 5): the
   # capture with its ETs and values kept (KEEP_VALUES=1), its plan, and the plan's graph under
   # compute-sanitizer's memcheck (three warm-up launches)
   export KC_KEEP_VALUES_ET=1
   args=(--model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused); name=bert_train
   . tools/capture_inputs.sh "${args[@]}"
   timeout 100 $kc run $out/$name.pt.trace.json.gz "${inputs[@]}" -o $out/$name.kc --no-energy > $out/$name.run.log 2>&1
   echo "run rc=$?" >> $out/summary.txt
   timeout 300 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 30 $kc exec $out/$name.kc/$name/plan.kcplan \
     --runs 1 --warmup 3 --no-energy -o $out/san.json > $out/memcheck.log 2>&1
   echo "memcheck rc=$?" >> $out/summary.txt; grep -m5 -E "Invalid|Error|kernel|assert" $out/memcheck.log >> $out/summary.txt ;;
g) # kc-f (data no op produced keeps the model's values): BERT's training step, which faulted in
   # call 5, BERT's inference, and a ConvNeXt-S training step (fused AdamW)
   model bert_train --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model bert_infer --model bert --layers 12 --batch 32 --seq 256 --dtype bf16
   model convnext_small_train --model convnext_small --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
