#!/bin/bash
# Swin-T from its eager trace on the final binary (kc-k), repeated: one capture with its
# values, kc's graph replay three times with the model measured again after each.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-k.xz; chmod +x .device/bin/kc-k
KC=.device/bin/kc-k PYTHON=/opt/torch/.venv/bin/python
R=$OUT/w; mkdir -p $R; n=swin_eager; S=(--model swin_t --batch 16)
out=$R name=$n py=$PYTHON here=$PWD
. tools/capture_inputs.sh "${S[@]}"
$KC ingest $R/$n.pt.trace.json.gz "${inputs[@]}" -o $R/$n.kcir > /dev/null 2>&1
$KC lower --tiers $R/$n.kcir -o $R/$n.l.kcir > /dev/null 2>&1
$KC plan $R/$n.l.kcir -o $R/$n.kcplan > /dev/null 2>&1
for k in 1 2 3; do
  $KC exec $R/$n.kcplan --runs 100 --energy-window 1 --energy-repeats 3 -o $R/$n.$k.graph.json > $R/$n.$k.log 2>&1
  $PYTHON traces/capture.py "${S[@]}" --name $n --out $R --remeasure >> $R/$n.remeasure.log 2>&1
done
for k in 1 2 3; do
  $KC report $R/$n.$k.graph.json --plan $R/$n.kcplan --reference $R/reference.json --reference-entry $n -o $R/$n.$k.report > /dev/null 2>&1
  grep "kc graph replay |\|model, CUDA graph" $R/$n.$k.report/report.md >> $R/summary.txt
done
rm -f $R/*.kcir $R/*.kcplan
cd $OUT && tar cJf w.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" w
