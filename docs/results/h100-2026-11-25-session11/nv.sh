#!/bin/bash
# The review's rewrite of Device::addr (behaviour unchanged): Swin-T's graph through its
# capture, one plan, replayed by kc-k (before) and kc-r (after), each once with CUPTI.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in kc-k kc-r; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
PYTHON=/opt/torch/.venv/bin/python R=$OUT/v; mkdir -p $R; n=swin
out=$R name=$n py=$PYTHON here=$PWD
. tools/capture_inputs.sh --model swin_t --batch 16 --cuda-graph
K=.device/bin/kc-r
$K ingest $R/$n.pt.trace.json.gz "${inputs[@]}" -o $R/$n.kcir > /dev/null 2>&1
$K lower --tiers $R/$n.kcir -o $R/$n.l.kcir > /dev/null 2>&1
$K plan $R/$n.l.kcir -o $R/$n.kcplan > /dev/null 2>&1
for b in kc-k kc-r; do
  .device/bin/$b exec $R/$n.kcplan --runs 100 --no-energy --verify -o $R/$b.graph.json > $R/$b.log 2>&1
  grep -h "graph replay:\|reads issued\|by name\|geometry\|non-finite" $R/$b.log | cut -c1-170 >> $R/summary.txt
done
rm -f $R/*.kcir $R/*.kcplan
cd $OUT && tar cJf v.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" v
