#!/bin/bash
# Session 14: units restored from a snapshot of the image (one copy instead of an eager pass
# before each unit), and a round that ran its values away while timed is timed again from
# the model's values. One capture per model, `kc run --reference` with kc-e on it, the model
# measured again after the run, the report at kc's temperature. PART picks the models;
# BUDGET (s) skips models that would start after it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-f}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
py=/opt/torch/.venv/bin/python here=$PWD
P=${1:?part}; out=$OUT/$P; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $out/gpu.csv 2>&1
T0=$(date +%s)
mark() { echo "$(date -u +%H:%M:%S) $*" >> $out/timeline.txt; }
kcrun() { # NAME
  local kc=.device/bin/$KC n=$1 s=$(date +%s%N)
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
L=(--model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused)
Q=(--model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach)
case $P in
h) model maxvit_t --model maxvit_t --batch 16 --dtype bf16 --no-values
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model resnext50 --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --no-values ;;
g) model swin_v2_t --model swin_v2_t --batch 16 --dtype bf16 --no-values
   model bloom_train --model bloom --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adam-fused
   model regnet_y --model regnet_y_1_6gf --batch 32 --dtype bf16 --channels-last --no-values
   model densenet121_tf32 --model densenet121 --batch 16 --dtype fp32 --tf32 --no-values
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model maxvit_t --model maxvit_t --batch 16 --dtype bf16 --no-values ;;
e) model llama_train "${L[@]}"
   model qwen2_train "${Q[@]}"
   model swin_v2_t_graph --model swin_v2_t --batch 16 --dtype bf16 --cuda-graph --no-values
   model mistral_decode_graph --model mistral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model regnet_y_graph --model regnet_y_1_6gf --batch 32 --dtype bf16 --channels-last --cuda-graph --no-values ;;
f) model densenet121_tf32 --model densenet121 --batch 16 --dtype fp32 --tf32 --cuda-graph --no-values
   model bloom_train --model bloom --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adam-fused
   model maxvit_t_graph --model maxvit_t --batch 16 --dtype bf16 --cuda-graph --no-values
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model resnext50_graph --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --cuda-graph --no-values
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
a) model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach ;;
b) model swin_v2_t_graph --model swin_v2_t --batch 16 --dtype bf16 --cuda-graph --no-values
   model mistral_decode_graph --model mistral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model regnet_y_graph --model regnet_y_1_6gf --batch 32 --dtype bf16 --channels-last --cuda-graph --no-values ;;
c) model densenet121_tf32 --model densenet121 --batch 16 --dtype fp32 --tf32 --cuda-graph --no-values
   model bloom_train --model bloom --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adam-fused
   model maxvit_t_graph --model maxvit_t --batch 16 --dtype bf16 --cuda-graph --no-values ;;
d) model t5_train --model t5 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model resnext50_graph --model resnext50_32x4d --batch 32 --dtype bf16 --channels-last --cuda-graph --no-values
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
esac
for f in $out/*/*/report/report.md; do echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, " $f | head -8; done >> $out/summary.txt
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P
