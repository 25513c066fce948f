#!/bin/bash
# DRAM and L2 traffic of one replay, kc's graph against the model's own CUDA graph (Nsight
# Compute, each graph profiled as one workload, caches left as the previous replay left
# them): `kc exec --profile-replay` and `capture.py --profile-replay` open a profiler range
# around exactly one replay. Part `n` adds Swin-T kernel by kernel (one iteration).
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-n.xz; chmod +x .device/bin/kc-n
KC=$PWD/.device/bin/kc-n PYTHON=/opt/torch/.venv/bin/python
NCU=/usr/local/cuda/bin/ncu
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors.sum,sm__inst_executed.sum,lts__t_sectors_srcunit_tex_aperture_device_op_read_lookup_miss.sum"
both() { # NAME LEVEL(graph|node) EXTRA-NCU-ARGS... -- CAPTURE-ARGS
  local n=$1 lvl=$2; shift 2
  local extra=(); while [ "$1" != "--" ]; do extra+=("$1"); shift; done; shift
  mark "kc $n $lvl"
  timeout 240 $NCU --profile-from-start off --graph-profiling $lvl --cache-control none "${extra[@]}" --metrics $M --csv \
    $KC exec $R/$n.kcplan --runs 5 --warmup 2 --no-energy --profile-replay -o $R/$n.$lvl.kc.json > $R/$n.$lvl.kc.csv 2> $R/$n.$lvl.kc.err
  mark "kc rc=$?"
  timeout 240 $NCU --profile-from-start off --graph-profiling $lvl --cache-control none "${extra[@]}" --metrics $M --csv \
    $PYTHON traces/capture.py "$@" --cuda-graph --profile-replay --out $R/m > $R/$n.$lvl.model.csv 2> $R/$n.$lvl.model.err
  mark "model rc=$?"
}
prep() { # NAME CAPTURE-ARGS
  local n=$1; shift
  mark "capture $n"
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@" --no-values
  $KC ingest $R/$n.pt.trace.json.gz "${inputs[@]}" -o $R/$n.kcir > $R/$n.ingest.log 2>&1
  $KC lower --tiers $R/$n.kcir -o $R/$n.l.kcir > $R/$n.lower.log 2>&1
  $KC plan $R/$n.l.kcir -o $R/$n.kcplan > $R/$n.plan.log 2>&1
  mark "planned $n rc=$?"
}
case $P in
a)
  S=(--model swin_t --batch 16)
  prep swin "${S[@]}" --cuda-graph
  both swin graph -- "${S[@]}"
  both swin node --launch-count 400 -- "${S[@]}"
  ;;
b)
  V=(--model vit_b_16 --dtype fp32 --tf32 --batch 16)
  prep vit "${V[@]}" --cuda-graph
  both vit graph -- "${V[@]}"
  D=(--model qwen2 --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode)
  prep dec "${D[@]}" --cuda-graph
  both dec graph -- "${D[@]}"
  R50=(--model resnet50 --batch 32 --dtype bf16 --channels-last)
  prep r50 "${R50[@]}" --cuda-graph
  both r50 graph -- "${R50[@]}"
  ;;
esac
find $R -name '*.kcplan' -delete; find $R -name '*.kcir' -delete
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" $P
