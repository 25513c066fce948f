#!/bin/bash
# Session 53, call 3 (nvidia-h200-x2): the tensor-parallel pair (../shared/traces/h200x2,
# `kc ingest`, `kc lower --tiers`, `kc plan` here, the plan in .device/tp) as a job of two
# ranks: kc's graph with --verify (each rank's in-context durations the mean of three
# launches back to back, first run on a GPU in a job), then the isolated pass with --verify
# (each unit also in the model's cache state, its code evicted where the model's is far),
# time only; the job report made here. Results in $OUT/job.txz.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
KC=${KC:?binary in .device/bin}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC out=$OUT/job; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version,power.limit --format=csv > $out/gpu.csv 2>&1
s=$(date +%s%N)
timeout 200 $kc exec .device/tp/tp.kcplan --ranks all --runs 50 --no-energy --verify -o $out/tp.graph.json --json > $out/graph.log 2>&1
echo "graph rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt; s=$(date +%s%N)
timeout 300 $kc exec .device/tp/tp.kcplan --ranks all --isolated --verify --no-energy -o $out/tp.iso.json --json > $out/iso.log 2>&1
echo "isolated rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
cat $out/summary.txt; tail -5 $out/graph.log $out/iso.log
cd $OUT && tar cJf job.txz job && rm -rf job
