#!/bin/bash
# The model's energy at kc's temperature, end to end: tools/capture_and_replay.sh (capture,
# kc graph replay with temperatures, the model measured again, isolated pass, report) and
# tools/capture_and_run.sh (kc run, the model again, the report again); with Swin-T's
# kernels recorded in kc's graph for a kernel-by-kernel comparison with the model's graph.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-m.xz; chmod +x .device/bin/kc-m
export KC=$PWD/.device/bin/kc-m PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
rep() { # NAME CAPTURE-ARGS
  local n=$1; mark "start $n"; tools/capture_and_replay.sh $R "$@" > /dev/null 2> $R/$n.script.err; mark "end $n rc=$?"
}
case $P in
m1)
  rep swin_t_b16_graph --model swin_t --batch 16 --cuda-graph
  timeout 100 $KC exec $R/swin_t_b16_graph.kcplan --runs 20 --no-energy --verify --kernels-out $R/swin_t_b16_graph.kernels.json > $R/swin.kernels.log 2>&1
  rep qwen2_2l_decode_b16 --model qwen2 --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
  ;;
m2)
  rep t5_b4s256_bf16_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
  mark "start run vit"
  tools/capture_and_run.sh $R vit_b16_fp32_tf32_b16 --model vit_b_16 --dtype fp32 --tf32 --batch 16 > /dev/null 2> $R/vit.script.err
  mark "end run vit rc=$?"
  ;;
t1)
  rep qwen2_2l_train_foreachadamw_b4s256 --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
  rep llama2l_train_fusedadamw_b4s256 --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
  rep resnet18_train_sgdm_b32_cl --model resnet18 --mode train --optimizer sgd-momentum --batch 32 --dtype bf16 --channels-last
  ;;
t2)
  rep mixtral2l_train_b2s256 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256 --mode train --dtype bf16 --optimizer adamw-fused
  rep gpt2_4l_train_b4s256 --model gpt2 --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
  rep swin_t_b16 --model swin_t --batch 16
  ;;
esac
rm -f $R/*.kcplan $R/*.kcir
find $R -name '*.kcplan' -delete
cd $OUT && tar cJf $P.txz --exclude="$P/*_capture.pt.trace.json.gz" --exclude="$P/*_eager.pt.trace.json.gz" --exclude="$P/*.et.json.gz" --exclude="$P/*.values.bin" --exclude="$P/vit*.pt.trace.json.gz" --exclude="$P/t5*.pt.trace.json.gz" --exclude="$P/*train*.pt.trace.json.gz" --exclude="$P/swin_t_b16.pt.trace.json.gz" $P
