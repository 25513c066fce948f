#!/bin/bash
# Issue 27 on session 12's kc (kc-s): four models not among session 11's eight: tools/capture_and_run.sh per model (capture, kc run
# with the model's reference, the model measured again, the report again at kc's temperature).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
B=${KCBIN:-kc-s}
xz -dkf .device/bin/$B.xz; chmod +x .device/bin/$B
export KC=$PWD/.device/bin/$B PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
T0=$(date +%s)
run() { # NAME CAPTURE-ARGS
  local n=$1 s=$(date +%s); shift
  if [ $(( s - T0 )) -gt ${BUDGET:-400} ]; then echo "$n skipped (time)" >> $R/summary.txt; return; fi
  timeout 200 tools/capture_and_run.sh $R $n "$@" > /dev/null 2> $R/$n.script.err
  echo "$n rc=$? $(( $(date +%s) - s )) s; kc run $(cat $R/$n.time 2>/dev/null)" >> $R/summary.txt
  find $R/$n -name '*.kcplan' -delete 2>/dev/null
}
case $P in
c)
  run swin_t_b16 --model swin_t --batch 16
  run vit_b16_fp32_tf32_b16 --model vit_b_16 --dtype fp32 --tf32 --batch 16
  run mixtral2l_prefill_b2s256 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256
  run qwen2_2l_train_foreach_b4s256 --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
  ;;
esac
cd $OUT && tar cJf $P.txz --exclude="$P/*.pt.trace.json.gz" --exclude="$P/*.et.json.gz" --exclude="$P/*.values.bin" --exclude="$P/*/*/report/replay.trace.json" --exclude="*.inductor_cache.tar.gz" $P
