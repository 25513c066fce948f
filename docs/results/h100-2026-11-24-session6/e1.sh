#!/bin/bash
# Issue 24 D4 exploration: the MoE's routing ops, their kernels, and what PyTorch's ET
# observer dumps of their integer inputs.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
R=$OUT/e1; mkdir -p $R
$PYTHON - > $R/moe_src.txt 2>&1 <<'PY'
import inspect, transformers
import transformers.models.mixtral.modeling_mixtral as m
print(transformers.__version__)
for n in dir(m):
    o = getattr(m, n)
    if inspect.isclass(o) and ("Moe" in n or "Expert" in n or "Sparse" in n):
        try: print(inspect.getsource(o))
        except Exception as e: print(n, e)
import transformers.integrations as ti
try:
    import transformers.integrations.moe as moe
    print(inspect.getsource(moe))
except Exception as e: print("no integrations.moe", e)
PY
mkdir -p $R/moe.et_resources
s=$(date +%s)
ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA=aten::sort,aten::histc,aten::index,aten::floor_divide,aten::_index_put_impl_,aten::index_put_,aten::cumsum,aten::embedding,aten::topk,aten::copy_,aten::masked_fill_,aten::ge,aten::clamp_ \
ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_RANGE=1 \
timeout 300 tools/capture_and_replay.sh $R moe --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256 > $R/car.log 2>&1
echo "rc=$? $(( $(date +%s) - s )) s" >> $R/times.txt
ls -la $R $R/moe.et_resources | head -80 > $R/ls.txt
tar cJf $OUT/e1.txz -C $OUT e1 --exclude='*.kcplan'
