#!/bin/bash
# Issue 24's families on the final binary (kc-k): per model one capture with recorded
# values (CUDA-graph captures through their capture), kc's graph replay with CUPTI and
# 3 x 1 s energy windows, the model measured again, the report at kc's temperature.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-k.xz; chmod +x .device/bin/kc-k
KC=.device/bin/kc-k PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
T0=$(date +%s)
model() { # NAME CAPTURE-ARGS
  local n=$1; shift
  if [ $(( $(date +%s) - T0 )) -gt 450 ]; then mark "skip $n (time)"; return; fi
  mark "capture $n"
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@"
  $KC ingest $R/$n.pt.trace.json.gz "${inputs[@]}" -o $R/$n.kcir > $R/$n.ingest.log 2>&1
  $KC lower --tiers $R/$n.kcir -o $R/$n.l.kcir > $R/$n.lower.log 2>&1
  $KC plan $R/$n.l.kcir -o $R/$n.kcplan > $R/$n.plan.log 2>&1
  $KC plan show $R/$n.kcplan > $R/$n.show.txt 2>&1
  mark "exec $n"
  $KC exec $R/$n.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $R/$n.graph.json > $R/$n.log 2>&1
  mark "remeasure $n"
  $PYTHON traces/capture.py "$@" --name $n --out $R --remeasure >> $R/$n.remeasure.log 2>&1
  $KC report $R/$n.graph.json --plan $R/$n.kcplan --reference $R/reference.json --reference-entry $n -o $R/$n.report > /dev/null 2>&1
  rm -f $R/$n.kcir $R/$n.l.kcir $R/$n.kcplan
}
case $P in
f1)
  model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
  model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
  model mixtral_train --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256 --mode train --dtype bf16 --optimizer adamw-fused
  model resnet18_sgd --model resnet18 --mode train --optimizer sgd-momentum --batch 32 --dtype bf16 --channels-last
  ;;
f2)
  model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
  model qwen2_decode_graph --model qwen2 --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
  model swin_eager --model swin_t --batch 16
  model convnext_t --model convnext_tiny --batch 32 --dtype bf16 --channels-last
  ;;
esac
for f in $R/*.report/report.md; do echo "== $f"; grep "kc graph replay |" $f; done > $R/summary.txt
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" $P
