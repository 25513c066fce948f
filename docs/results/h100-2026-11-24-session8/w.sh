#!/bin/bash
# Swin-T: where kc's graph spends more time between kernels than the model's own graph.
# The model captured with --cuda-graph (its graph's replays profiled, linked through the
# profiled capture), kc's replay of that program with --verify --kernels-out; both kernel
# timelines come back for a gap-by-gap comparison.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-b.xz; chmod +x .device/bin/kc-b; KC=$PWD/.device/bin/kc-b
R=$OUT/${1:-w}; mkdir -p $R; n=swin_t_b16_graph
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
out=$R name=$n py=/opt/torch/.venv/bin/python here=$PWD
. tools/capture_inputs.sh --model swin_t --batch 16 --cuda-graph
$KC ingest $R/$n.pt.trace.json.gz "${inputs[@]}" -o $R/$n.kcir > $R/$n.ingest.log 2>&1
$KC lower --tiers $R/$n.kcir -o $R/$n.l.kcir > $R/$n.lower.log 2>&1
$KC plan $R/$n.l.kcir -o $R/$n.kcplan > /dev/null 2>&1
$KC plan show $R/$n.kcplan > $R/$n.planshow.txt 2>&1
$KC exec $R/$n.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify --kernels-out $R/$n.kcverify.json -o $R/$n.graph.json > $R/$n.graph.log 2>&1
rm -f $R/*.kcir
cd $OUT && tar cJf ${1:-w}.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" ${1:-w}
