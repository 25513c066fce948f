#!/bin/bash
# DRAM traffic and L2 hit rate of Swin-T's elementwise kernels, kc's graph against the
# model's (Nsight Compute, graph nodes profiled one by one): the last replay's kernels.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-g.xz; chmod +x .device/bin/kc-g
KC=$PWD/.device/bin/kc-g PYTHON=/opt/torch/.venv/bin/python
R=$OUT/nc; mkdir -p $R
M="dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum"
timeout 60 ncu --metrics $M --csv $PYTHON -c "import torch; a=torch.randn(4096,4096,device='cuda'); (a+a).sum().item()" > $R/check.csv 2> $R/check.err
echo "check rc=$?" > $R/summary.txt; tail -3 $R/check.err >> $R/summary.txt
if grep -q "dram__bytes_read" $R/check.csv; then
  out=$R name=swin py=$PYTHON here=$PWD
  . tools/capture_inputs.sh --model swin_t --batch 16 --cuda-graph --no-values
  $KC ingest $R/swin.pt.trace.json.gz "${inputs[@]}" -o $R/s.kcir > /dev/null 2>&1
  $KC lower --tiers $R/s.kcir -o $R/s.l.kcir > /dev/null 2>&1
  $KC plan $R/s.l.kcir -o $R/s.kcplan > /dev/null 2>&1
  timeout 200 ncu --graph-profiling node --kernel-name regex:elementwise --launch-count 1200 --metrics $M --csv \
    $KC exec $R/s.kcplan --runs 1 --warmup 0 --no-energy -o $R/kc.json > $R/kc.csv 2> $R/kc.err
  echo "kc rc=$?" >> $R/summary.txt
  cat > $R/m.py <<'PY'
import sys, torch
sys.path.insert(0, "traces")
import capture as c
c.torch = torch
import argparse
a = argparse.Namespace(model="swin_t", batch=16, seq=128, image=224, dtype="fp16", mode="inference", layers=None, hidden=None, heads=None, kv_heads=None, intermediate=None, vocab=None, channels_last=False, compile=False, optimizer="adamw", iters=3)
torch.manual_seed(0)
step, _ = c.build(a)
g = c.capture_graph(step)
torch.cuda.synchronize()
g.replay(); torch.cuda.synchronize()
PY
  timeout 200 ncu --graph-profiling node --kernel-name regex:elementwise --launch-count 1200 --metrics $M --csv $PYTHON $R/m.py > $R/model.csv 2> $R/model.err
  echo "model rc=$?" >> $R/summary.txt
fi
rm -f $R/*.kcir $R/*.kcplan
cd $OUT && tar cJf nc.txz --exclude="nc/*.pt.trace.json.gz" --exclude="nc/*.et.json.gz" --exclude="nc/*.values.bin" nc
