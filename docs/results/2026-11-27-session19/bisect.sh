#!/bin/bash
# Session 19, call 5: T5's graph faults (SIGSEGV inside cuGraphLaunch, first launch over the
# memory image) with the values its capture recorded, and runs without them. The same
# capture's plan built with each subset of its values (by op, on the machine here:
# bisect.py's files, .device/bis/*.kcplan) is replayed once as a graph; which subsets fault.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-c}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
out=$OUT/bisect; mkdir -p $out
for v in ${VARIANTS:-none bools ints all where add add_ minimum copy_ fill_ rest}; do
  s=$(date +%s%N)
  timeout 90 .device/bin/$KC exec .device/bis/$v.kcplan --runs 3 --warmup 1 --no-energy -o $out/$v.json > $out/$v.log 2>&1
  echo "$v rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" | tee -a $out/summary.txt
done
cd $OUT && tar cJf bisect.txz bisect && rm -rf bisect
