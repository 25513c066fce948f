#!/bin/bash
# Session 38's call 6 (kc-y, 4ca85e4): `kc run` on the embedded BLOOM-560M trace, its
# report's notes giving each run's own phases. Run from the repository root on the GPU
# machine with .device carried (`device` run, carry [".device"]); results in $OUT/f.txz.
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-y.xz; chmod +x .device/bin/kc-y; kc=$PWD/.device/bin/kc-y
mkdir -p $OUT/f; cd $OUT/f; s=$(date +%s%N)
timeout 150 $kc run -o emb --json > run.json 2> run.log
echo "embedded rc=$? $(( ($(date +%s%N)-s)/1000000 )) ms" > summary.txt
grep -rh "own time" emb --include=report.md >> summary.txt
find emb -name "*.kcplan" -delete; find emb -name "replay.trace.json" -delete
cat summary.txt; cd $OUT && tar cJf f.txz f && rm -rf f
