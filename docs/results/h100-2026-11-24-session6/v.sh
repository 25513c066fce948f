#!/bin/bash
# Which recorded values make the GPT-2 training step's image non-finite: the same trace
# replayed with subsets of its values file (graph mode, the image's self-check).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new; KC=$PWD/.device/bin/kc-new
I=.device/in/v; R=$OUT/v; mkdir -p $R; n=gpt2_4l_train_b4s256
for v in ${VARIANTS:-none all noseed nonll noemb onlyseed}; do
  vals=(); [ $v != none ] && vals=(--values $I/$v.values.bin)
  $KC ingest $I/$n.pt.trace.json.gz --shapes $I/$n.et.json.gz "${vals[@]}" -o $R/g.kcir > /dev/null 2>&1
  $KC lower --tiers $R/g.kcir -o $R/l.kcir > /dev/null 2>&1
  $KC plan $R/l.kcir -o $R/p.kcplan > /dev/null 2>&1
  $KC exec $R/p.kcplan --runs ${RUNS:-50} ${EXTRA:---no-energy} -o $R/$v.json > $R/$v.log 2>&1
  echo "$v: $(grep -o 'non-finite values [0-9.]* %' $R/$v.log)" >> $R/summary.txt
done
rm -f $R/*.kcir $R/p.kcplan
