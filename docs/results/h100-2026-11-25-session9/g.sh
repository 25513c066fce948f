#!/bin/bash
# cuBLAS(Lt) asked as PyTorch asks (workspace sizes, operand alignments): this binary (kc-n)
# against the previous one (kc-b) on models whose tier-2 GEMMs go through cuBLASLt, each
# captured once and both binaries replaying the same capture in the same call.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in ${BINS:-kc-n kc-b}; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
PREV=$PWD/.device/bin/kc-b
export KC=$PWD/.device/bin/${OWN:-kc-n} PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
$PYTHON - > $R/torch_blas.txt 2>&1 <<'PY'
import torch, os
import torch.backends.cuda as c
print("torch", torch.__version__, "cuda", torch.version.cuda)
print("workspace API:", [n for n in dir(c) if "workspace" in n.lower()])
for n in ("cublas_workspace_size", "cublaslt_workspace_size"):
    f = getattr(c, n, None)
    if f:
        try: print(n, f())
        except Exception as e: print(n, "error", e)
print("env", {k: os.environ.get(k) for k in ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE", "TORCH_CUBLASLT_UNIFIED_WORKSPACE")})
PY
ex() { # BINARY PLAN TAG
  local s=$(date +%s)
  timeout 150 $1 exec $2 --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $R/$3.graph.json > $R/$3.graph.log 2>&1
  echo "$3: rc=$? $(( $(date +%s) - s )) s $(grep -o 'non-finite values [0-9.]* %' $R/$3.graph.log)" >> $R/summary.txt
}
prep() { # BINARY TRACE TAG INGEST-ARGS...
  local b=$1 t=$2 tag=$3; shift 3
  $b ingest $t "$@" -o $R/$tag.kcir > /dev/null 2>$R/$tag.ingest.err
  $b lower --tiers $R/$tag.kcir -o $R/$tag.lowered.kcir > /dev/null 2>&1
  rm -f $R/$tag.kcir
}
cap() { # NAME CAPTURE-ARGS
  local n=$1; shift; local s=$(date +%s)
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@"
  echo "captured $n: $(( $(date +%s) - s )) s" >> $R/summary.txt
  prep $KC $R/$n.pt.trace.json.gz $n "${inputs[@]}"
  $KC plan $R/$n.lowered.kcir -o $R/$n.own.kcplan > /dev/null 2>&1
  $KC plan show $R/$n.own.kcplan > $R/$n.planshow.txt 2>&1
  ex $KC $R/$n.own.kcplan $n.own
  [ -z "${NOISO:-}" ] && timeout 100 $KC exec $R/$n.own.kcplan --isolated --cache context --no-energy -o $R/$n.isolated.json > $R/$n.isolated.log 2>&1
  if [ -z "${NOPREV:-}" ]; then
  prep $PREV $R/$n.pt.trace.json.gz $n.prev "${inputs[@]}"
  $PREV plan $R/$n.prev.lowered.kcir -o $R/$n.prev.kcplan > /dev/null 2>&1
  ex $PREV $R/$n.prev.kcplan $n.prev
  fi
  ex $KC $R/$n.own.kcplan $n.own2
  rm -f $R/*.kcplan $R/*.lowered.kcir
}
case $P in
g1)
  cap swin_t_b16 --model swin_t --batch 16
  cap swin_t_b16_graph --model swin_t --batch 16 --cuda-graph
  cap gpt2_4l_train_b4s256 --model gpt2 --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
  ;;
g2)
  cap swin_t_b16 --model swin_t --batch 16
  cap swin_t_b16_graph --model swin_t --batch 16 --cuda-graph
  ;;
g4)
  cap swin_t_b16 --model swin_t --batch 16
  cap swin_t_b16_graph --model swin_t --batch 16 --cuda-graph
  cap vit_b16_fp32_tf32_b16 --model vit_b_16 --dtype fp32 --tf32 --batch 16
  cap t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
  ;;
g5)
  export NOPREV=1
  cap qwen2_2l_train_foreachadamw_b4s256 --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
  cap llama2l_train_fusedadamw_b4s256 --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
  cap resnet18_train_sgdm_b32_cl --model resnet18 --mode train --optimizer sgd-momentum --batch 32 --dtype bf16 --channels-last
  cap mixtral2l_train_b2s256 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256 --mode train --dtype bf16 --optimizer adamw-fused
  cap qwen2_2l_decode_b16 --model qwen2 --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
  ;;
g6)
  export NOPREV=1
  cap t5_b4s256_bf16_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
  ;;
g7)
  export NOPREV=1 NOISO=1
  cap swin_t_b16_graph --model swin_t --batch 16 --cuda-graph
  cap t5_b4s256_bf16_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
  ;;
g3)
  cap vit_b16_fp32_tf32_b16 --model vit_b_16 --dtype fp32 --tf32 --batch 16
  cap t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
  ;;
esac
cd $OUT && tar cJf $P.txz --exclude="$P/*.pt.trace.json.gz" --exclude="$P/*.et.json.gz" --exclude="$P/*.values.bin" --exclude="$P/*kernels*.json" $P
