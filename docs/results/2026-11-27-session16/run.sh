#!/bin/bash
# Session 16: the round of every unit with lead-ins (each unit after the model's step
# before it; issue 27, deliverable 4). PART names a set of models; each is captured, answered
# by `kc run --reference` (the round with lead-ins, the default), answered again by an
# isolated pass without energy whose round has no lead-ins (`--round-no-lead-in`: the
# same-call comparison), and the model measured again after both (`--remeasure`).
# Run from the repository root with the binary in .device/bin (KC= its name).
# BUDGET (s) skips models that would start after it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-p}
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
  # The same plan's round without lead-ins, timed (no energy): the comparison in one call.
  mark "round without lead-ins $n"
  [ -f $d/plan.kcplan ] && timeout 90 $kc exec $d/plan.kcplan --isolated --verify --no-energy --round-no-lead-in \
    -o $d/plan.isolated.nolead.json --json > $out/$n.nolead.log 2>&1
  mark "remeasure $n"
  $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report > $out/$n.report.log 2>&1
  rm -f $d/plan.kcplan $d/*.kcir $d/report/replay.trace.json
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
a) # the models whose misses the lead-ins address, again, and two never measured
   cnn effnet_v2_s efficientnet_v2_s; cnn wide_resnet50 wide_resnet50_2; cnn mobilenet_v2 mobilenet_v2
   cnn resnet50 resnet50; cnn resnet152 resnet152 16 ;;
b) # never measured by kc
   cnn inception_v3 inception_v3; cnn googlenet googlenet; cnn shufflenet_v2 shufflenet_v2_x1_0 64
   cnn mnasnet mnasnet1_0; cnn efficientnet_b0 efficientnet_b0; cnn densenet169 densenet169 ;;
c) # transformers first (two of them again), then CNNs
   model swin_s --model swin_s --batch 16 --dtype bf16 --no-values
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model vit_b_32 --model vit_b_32 --batch 32 --dtype bf16 --no-values
   cnn convnext_small convnext_small 16; cnn vgg16_bn vgg16_bn; cnn regnet_y_8gf regnet_y_8gf ;;
d) # session 14-15's language models and ViT-B TF32 again, with this build
   model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
   model mistral_decode_graph --model mistral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model vit_b16_tf32 --model vit_b_16 --batch 16 --dtype fp32 --tf32 --no-values ;;
e) # session 14-15's vision models again, with this build
   model maxvit_t --model maxvit_t --batch 16 --dtype bf16 --no-values
   model swin_v2_t --model swin_v2_t --batch 16 --dtype bf16 --no-values
   cnn resnext50 resnext50_32x4d; cnn regnet_y regnet_y_1_6gf
   model densenet121_tf32 --model densenet121 --batch 16 --dtype fp32 --tf32 --no-values
   model vit_l_16 --model vit_l_16 --batch 8 --dtype bf16 --no-values ;;
esac
for f in $out/*/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round" $f | head -9; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P
