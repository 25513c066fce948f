#!/bin/bash
# Reads of allocated results bound by address for every tier (a GEMM reading a layer
# norm's result reads the result, not a detached region): per model one capture with
# recorded values, planned by the binary before (kc-n) and after (kc-j), graph replays
# alternated twice with CUPTI's kernels and the model measured again after each round;
# reports at kc's temperature; Nsight Compute's DRAM and L2 counters of one Swin-T replay.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in kc-n kc-j; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
PYTHON=/opt/torch/.venv/bin/python NCU=/usr/local/cuda/bin/ncu
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
T0=$(date +%s)
model() { # NAME CAPTURE-ARGS
  local n=$1; shift
  mark "capture $n"
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@"
  for b in kc-n kc-j; do
    .device/bin/$b ingest $R/$n.pt.trace.json.gz "${inputs[@]}" -o $R/$n.$b.kcir > $R/$n.$b.ingest.log 2>&1
    .device/bin/$b lower --tiers $R/$n.$b.kcir -o $R/$n.$b.l.kcir > $R/$n.$b.lower.log 2>&1
    .device/bin/$b plan $R/$n.$b.l.kcir -o $R/$n.$b.kcplan > $R/$n.$b.plan.log 2>&1
    .device/bin/$b plan show $R/$n.$b.kcplan > $R/$n.$b.show.txt 2>&1
  done
  mark "planned $n"
  for k in 1 2; do
    for b in kc-n kc-j; do
      mark "exec $n $b $k"
      .device/bin/$b exec $R/$n.$b.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify \
        -o $R/$n.$b.$k.graph.json > $R/$n.$b.$k.log 2>&1
    done
    mark "remeasure $n $k"
    $PYTHON traces/capture.py "$@" --name $n --out $R --remeasure >> $R/$n.remeasure.log 2>&1
  done
  for b in kc-n kc-j; do for k in 1 2; do
    .device/bin/kc-j report $R/$n.$b.$k.graph.json --plan $R/$n.$b.kcplan --reference $R/reference.json --reference-entry $n -o $R/$n.$b.$k.report > /dev/null 2>&1
  done; done
}
model swin --model swin_t --batch 16 --cuda-graph
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors.sum,sm__inst_executed.sum,lts__t_sectors_srcunit_tex_aperture_device_op_read_lookup_miss.sum"
mark "ncu kc"
timeout 60 $NCU --profile-from-start off --graph-profiling graph --cache-control none --metrics $M --csv \
  .device/bin/kc-j exec $R/swin.kc-j.kcplan --runs 5 --warmup 2 --no-energy --profile-replay -o $R/ncu.kc.json > $R/ncu.graph.kc.csv 2> $R/ncu.graph.kc.err
mark "ncu done rc=$?"
model vit --model vit_b_16 --dtype fp32 --tf32 --batch 16
[ $(( $(date +%s) - T0 )) -lt 400 ] && model gpt2t --model gpt2 --layers 4 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
find $R -name '*.kcplan' -delete; find $R -name '*.kcir' -delete
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" $P
