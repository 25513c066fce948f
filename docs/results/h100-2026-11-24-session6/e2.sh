#!/bin/bash
# Issue 24 D4: MoE models captured with the values of their integer tensors, replayed by kc
# with and without them (same call, same GPU).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
both() { # NAME CAPTURE-ARGS: capture and replay with values, then the same trace without them
  local n=$1; shift; local s=$(date +%s)
  timeout ${TO:-300} tools/capture_and_replay.sh $R $n "$@" > /dev/null 2>$R/$n.err
  echo "rc=$? $(( $(date +%s) - s )) s: $n with values" >> $R/times.txt
  $KC ingest $R/$n.pt.trace.json.gz --shapes $R/$n.et.json.gz -o $R/nv.kcir --json > $R/$n.novalues.ingest.json 2>&1
  $KC lower --tiers $R/nv.kcir -o $R/nvl.kcir > /dev/null 2>&1
  $KC plan $R/nvl.kcir -o $R/$n.novalues.kcplan --json > $R/$n.novalues.plan.json 2>&1
  $KC exec $R/$n.kcplan --runs 20 --no-energy --verify --kernels-out $R/$n.kernels.json -o $R/$n.verify.json > $R/$n.verify.log 2>&1
  $KC exec $R/$n.novalues.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify --kernels-out $R/$n.novalues.kernels.json -o $R/$n.novalues.graph.json > $R/$n.novalues.graph.log 2>&1
  $KC exec $R/$n.novalues.kcplan --isolated --cache context --no-energy -o $R/$n.novalues.isolated.json > $R/$n.novalues.isolated.log 2>&1
  $KC report $R/$n.novalues.graph.json --isolated $R/$n.novalues.isolated.json --plan $R/$n.novalues.kcplan --reference $R/reference.json --reference-entry $n -o $R/$n.novalues.report > /dev/null 2>&1
  $KC plan show $R/$n.kcplan > $R/$n.planshow.txt 2>&1
  echo "rc=$? $(( $(date +%s) - s )) s: $n done" >> $R/times.txt
  rm -f $R/nv.kcir $R/nvl.kcir
}
case $P in
e2|e3)
both mixtral2l_b2s256 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256
both qwen3moe2l_b4s256 --model qwen3_moe --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --vocab 32000 --batch 4 --seq 256
;;
esac
[ $P = e3 ] && both swin_t_b16_fp16 --model swin_t --batch 16 --dtype fp16
case $P in
e4)
both mixtral2l_b2s256 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256
both qwen3moe2l_b4s256 --model qwen3_moe --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --vocab 32000 --batch 4 --seq 256
;;
e6)
both gpt2_4l_train_b4s256 --model gpt2 --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
both mixtral2l_train_b2s256 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256 --mode train --dtype bf16 --optimizer adamw-fused
;;
e5)
both swin_t_b16_fp16 --model swin_t --batch 16 --dtype fp16
both gpt2_4l_train_b4s256 --model gpt2 --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
;;
esac
cd $OUT && tar cJf $P.txz $P
