#!/bin/bash
# Session 21. PART names a set of models; each is captured, answered by `kc run --reference`
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
h) # kc's current build on the H100 (its last H100 answers were session 15's build): BERT, a
   # family kc was not tuned on, captured as CUDA graphs (its eager trace and its graph are
   # different programs: Hugging Face builds explicit masks under capture), inference and a
   # training step with fused AdamW; a vision training step (fused Adam), ViT-B/16 in TF32
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph
   model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   model resnext50_train --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --mode train --optimizer adam-fused
   model vit_b_16_tf32 --model vit_b_16 --batch 16 --dtype fp32 --tf32 --no-values ;;
i) # BERT's capture, kept: in call 1 its capture launched one more GPU activity (428) than its
   # graph replays (427), and kc refused to pair them; its runtime calls listed (capture_calls.txt)
   args=(--model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph); name=bert_infer_graph
   mark "capture $name"; . tools/capture_inputs.sh "${args[@]}"
   $py tools/capture_calls.py $out/${name}_capture.pt.trace.json.gz $out/$name.pt.trace.json.gz > $out/capture_calls.txt 2>&1
   cp $out/${name}_capture.pt.trace.json.gz $out/bert_capture.trace.kept
   rm -f $out/*.values.bin
   # the H100, continued: an MoE decode graph, an encoder-decoder graph, a compiled CNN, a
   # GQA decode graph, a CNN in fp32 with TF32
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model convnext_tiny_compiled --model convnext_tiny --batch 32 --dtype bf16 --channels-last --compile --no-values
   model qwen2_decode_graph --model qwen2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model regnety_tf32 --model regnet_y_3_2gf --batch 32 --dtype fp32 --tf32 --channels-last --no-values ;;
j) # kc-h (a capture's fills its graph holds no node for are left out where the alignment is
   # unique): BERT on the H200 as CUDA graphs (the README's chart), its inference graph's
   # capture and replay traces kept for a fixture, and BERT's training graph without the
   # values file: the index bounds drawn from the plan alone (no GPU run before)
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph
   for f in $out/bert_infer_graph.pt.trace.json.gz $out/bert_infer_graph_capture.pt.trace.json.gz; do cp $f ${f%.pt.trace.json.gz}.trace.kept; done
   model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph
   model bert_train_graph_novalues --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph --no-values ;;
k) # kc-h on the H100: BERT's inference and training graphs (refused at ingest in call 1)
   model bert_infer_graph --model bert --layers 12 --batch 32 --seq 256 --dtype bf16 --cuda-graph
   model bert_train_graph --model bert --layers 4 --batch 16 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused --cuda-graph ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
