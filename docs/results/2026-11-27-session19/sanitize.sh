#!/bin/bash
# Session 19, call 8: the faulting T5 plan (its integer values) under compute-sanitizer's memcheck.
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-c}; xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
mkdir -p $OUT/san
timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 20 .device/bin/$KC exec .device/bis/ints.kcplan --runs 1 --warmup 1 --no-energy -o $OUT/san/ints.json > $OUT/san/memcheck.log 2>&1
echo "rc=$?" >> $OUT/san/memcheck.log
cd $OUT && tar cJf san.txz san && rm -rf san
