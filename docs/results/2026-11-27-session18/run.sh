#!/bin/bash
# Session 18. PART names a set of models; each is captured, answered by `kc run --reference`
# (units whose repeats alone ran their values away are now measured again, every launch
# from the model's values at their places; the results keep both measurements), the model
# measured again (`--remeasure`), and reported. nvidia-smi samples clocks and power every
# 200 ms throughout (smi.csv). Run from the repository root, binary in .device/bin (KC=).
# BUDGET (s) skips models that would start after it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-u}
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
    --reference-entry $n -o $out/$n.kc --json > $out/$n.run.json 2> $out/$n.run.log
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
a) # session 17's energy misses from units that ran their values away, then unseen models
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   cnn convnext_small convnext_small 16
   cnn mobilenet_v3_large mobilenet_v3_large 64
   model swin_b --model swin_b --batch 8 --dtype bf16 --no-values
   cnn resnet34 resnet34 ;;
b) # unseen models: a training step with SGD and momentum, a CNN family, and MoE decode
   model gpt2_train_sgd --model gpt2 --layers 4 --batch 8 --seq 256 --dtype bf16 --mode train --optimizer sgd-momentum
   cnn efficientnet_b3 efficientnet_b3 32
   cnn mnasnet mnasnet1_0; cnn shufflenet_v2 shufflenet_v2_x1_0 64
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
c) # unseen models: MoE decode graph first (it may not capture), a plain CNN, windows, dense blocks
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   cnn resnet34 resnet34
   model swin_v2_b --model swin_v2_b --batch 8 --dtype bf16 --no-values
   cnn densenet201 densenet201 16
   cnn regnet_y_3_2gf regnet_y_3_2gf ;;
d) # with kc-v (integer operands as each invocation read them): the MoE miss, T5, and more
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   cnn resnet34 resnet34
   cnn regnet_y_3_2gf regnet_y_3_2gf ;;
e) # Qwen3-MoE's decode graph again, its plan and traces kept (KEEP=1): why its grouped GEMMs run slower alone
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
f) # with kc-w (a bound read's stand-in takes its producer's values in the model pass): the MoE miss again, then more
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   cnn resnet34 resnet34
   cnn regnet_y_3_2gf regnet_y_3_2gf
   model swin_b --model swin_b --batch 8 --dtype bf16 --no-values ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
