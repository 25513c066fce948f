#!/bin/bash
# Session 15: the answer in a minute (two energy windows per unit where the target allows,
# the graph's windows 0.5 s), three models never measured by kc before on both GPUs, and
# the H100 plans replayed on the H200 against the model measured there (issue 27,
# deliverables 4, 5 and 6). PART h100: capture + `kc run --reference` + the model measured
# again, the plans kept for the H200; PART h200: the same, then the H100 plans (carried in
# .device/h100plans) replayed with `kc exec` after each model and reported against the
# H200's measurement of it.
# BUDGET (s) skips models that would start after it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-o}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD
P=${1:?part}; out=$OUT/$P; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $out/gpu.csv 2>&1
T0=$(date +%s)
mark() { echo "$(date -u +%H:%M:%S) $*" >> $out/timeline.txt; }
kcrun() { # NAME
  local n=$1 s=$(date +%s%N)
  mark "kc run $n"
  timeout 200 $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.kc --json > $out/$n.run.json 2> $out/$n.run.log
  echo "$n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  local d=$out/$n.kc/$n
  mark "remeasure $n"
  $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  iso=$(ls $d/plan.isolated.*.json 2>/dev/null | head -1)
  $kc report $d/plan.graph.json ${iso:+--isolated $iso} --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report > $out/$n.report.log 2>&1
  [ $P = h100 ] && mkdir -p $OUT/plans && xz -3 -c $d/plan.kcplan > $OUT/plans/$n.kcplan.xz
  rm -f $d/plan.kcplan $d/*.kcir $d/report/replay.trace.json
}
cross() { # NAME: the H100 plan on this GPU, against the model measured here
  local n=$1 p=.device/h100plans/$1.kcplan
  [ -f $p.xz ] || return 0
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
Q=(--model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach)
V=(--model vit_b_16 --batch 16 --dtype fp32 --tf32 --no-values)
E=(--model efficientnet_v2_s --batch 32 --dtype bf16 --channels-last --no-values)
case $P in
h200a) # the H200 in two calls (each under ten minutes)
   model qwen2_train "${Q[@]}"; cross qwen2_train
   model vit_b16_tf32 "${V[@]}"; cross vit_b16_tf32 ;;
h200b)
   model effnet_v2_s "${E[@]}"; cross effnet_v2_s ;;
n) # models kc never measured, on the H200: an encoder-decoder training step, a windowed
   # ViT, a wide CNN, an MoE decode graph
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model swin_s --model swin_s --batch 16 --dtype bf16 --no-values
   model wide_resnet50 --model wide_resnet50_2 --batch 32 --dtype bf16 --channels-last --no-values
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
m) # four more never measured by kc, on the H200, with the final build
   model convnext_small --model convnext_small --batch 16 --dtype bf16 --channels-last --no-values
   model resnet152 --model resnet152 --batch 16 --dtype bf16 --channels-last --no-values
   model vit_l_16 --model vit_l_16 --batch 8 --dtype bf16 --no-values
   model regnet_x_3_2gf --model regnet_x_3_2gf --batch 32 --dtype bf16 --channels-last --no-values ;;
r) # three of session 14's models again (another card, the final build): run to run
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model mistral_decode_graph --model mistral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model resnext50 --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --no-values ;;
h100|h200)
   # On the H200 each model's H100 plan follows it (part h200's reference is the model here).
   model qwen2_train "${Q[@]}"; cross qwen2_train
   model vit_b16_tf32 "${V[@]}"; cross vit_b16_tf32
   model effnet_v2_s "${E[@]}"; cross effnet_v2_s ;;
esac
for f in $out/*/*/report/report.md $out/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round" $f | head -9; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
# Only 8 files come back: the tar, and the plans' one folder where there is one.
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P
