#!/bin/bash
# Issue 27 on the final kc of session 11 (kc-k): tools/capture_and_run.sh per model (capture, kc run
# with the model's reference, the model measured again, the report again at kc's temperature).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-k.xz; chmod +x .device/bin/kc-k
export KC=$PWD/.device/bin/kc-k PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
run() { # NAME CAPTURE-ARGS
  local n=$1 s=$(date +%s); shift
  timeout 200 tools/capture_and_run.sh $R $n "$@" > /dev/null 2> $R/$n.script.err
  echo "$n rc=$? $(( $(date +%s) - s )) s; kc run $(cat $R/$n.time 2>/dev/null)" >> $R/summary.txt
  find $R/$n -name '*.kcplan' -delete 2>/dev/null
}
case $P in
a)
  run resnet50_b32_cl --model resnet50 --batch 32 --dtype bf16 --channels-last
  run convnext_tiny_b32_cl --model convnext_tiny --batch 32 --dtype bf16 --channels-last
  run efficientnet_b0_b32 --model efficientnet_b0 --batch 32 --dtype fp16
  run mobilenet_v3_large_b64 --model mobilenet_v3_large --batch 64 --dtype fp16
  ;;
b)
  run t5_b4s256_bf16_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
  run qwen2_4l_decode_b4_graph --model qwen2 --layers 4 --batch 4 --seq 512 --dtype bf16 --mode decode --cuda-graph
  run gpt2_6l_decode_b8_graph --model gpt2 --layers 6 --batch 8 --seq 256 --dtype fp16 --mode decode --cuda-graph
  run llama2l_train_fusedadamw_b4s256 --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
  ;;
esac
cd $OUT && tar cJf $P.txz --exclude="$P/*.pt.trace.json.gz" --exclude="$P/*.et.json.gz" --exclude="$P/*.values.bin" --exclude="$P/*/*/report/replay.trace.json" --exclude="*.inductor_cache.tar.gz" $P
