#!/bin/bash
# Swin-T's shifted-window masks computed by the replay: one capture of the model's CUDA
# graph (with recorded values), planned three ways -- before the change (kc-n) without the
# values file, after it (kc-i) without the values file, after it with the values file --
# graph replays alternated twice with CUPTI's kernels, the model measured again after each
# round, reports at kc's temperature; then Nsight Compute's DRAM and L2 counters of one
# replay (kc-i with values) against the model's graph, whole graph and kernel by kernel.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in kc-n kc-i; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
PYTHON=/opt/torch/.venv/bin/python NCU=/usr/local/cuda/bin/ncu
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $R/timeline.txt; }
S=(--model swin_t --batch 16)
n=swin
mark "capture"
out=$R name=$n py=$PYTHON here=$PWD
. tools/capture_inputs.sh "${S[@]}" --cuda-graph
novalues=(); skip=0
for x in "${inputs[@]}"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  if [ "$x" = --values ]; then skip=1; continue; fi
  novalues+=("$x")
done
echo "with values: ${inputs[*]}" > $R/inputs.txt; echo "without: ${novalues[*]}" >> $R/inputs.txt
plan() { # BIN TAG INPUTS...
  local b=$1 t=$2; shift 2
  .device/bin/$b ingest $R/$n.pt.trace.json.gz "$@" -o $R/$t.kcir > $R/$t.ingest.log 2>&1
  .device/bin/$b lower --tiers $R/$t.kcir -o $R/$t.l.kcir > $R/$t.lower.log 2>&1
  .device/bin/$b plan $R/$t.l.kcir -o $R/$t.kcplan > $R/$t.plan.log 2>&1
  .device/bin/$b plan show $R/$t.kcplan > $R/$t.show.txt 2>&1
  mark "planned $t rc=$?"
}
plan kc-n old_nv "${novalues[@]}"
plan kc-i new_nv "${novalues[@]}"
plan kc-i new_v "${inputs[@]}"
run() { # BIN TAG ROUND
  local b=$1 t=$2 k=$3
  mark "exec $t $k"
  .device/bin/$b exec $R/$t.kcplan --runs 100 --energy-window 1 --energy-repeats 3 --verify \
    --kernels-out $R/$t.$k.kernels.json -o $R/$t.$k.graph.json > $R/$t.$k.log 2>&1
}
for k in 1 2; do
  run kc-n old_nv $k; run kc-i new_nv $k; run kc-i new_v $k
  mark "remeasure $k"
  $PYTHON traces/capture.py "${S[@]}" --cuda-graph --name $n --out $R --remeasure >> $R/remeasure.log 2>&1
done
for t in old_nv new_nv new_v; do for k in 1 2; do
  .device/bin/kc-i report $R/$t.$k.graph.json --plan $R/$t.kcplan --reference $R/reference.json --reference-entry $n -o $R/$t.$k.report > $R/$t.$k.report.log 2>&1
done; done
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors.sum,sm__inst_executed.sum,lts__t_sectors_srcunit_tex_aperture_device_op_read_lookup_miss.sum"
for lvl in graph node; do
  extra=(); [ $lvl = node ] && extra=(--launch-count 400)
  mark "ncu kc $lvl"
  timeout 170 $NCU --profile-from-start off --graph-profiling $lvl --cache-control none "${extra[@]}" --metrics $M --csv \
    .device/bin/kc-i exec $R/new_v.kcplan --runs 5 --warmup 2 --no-energy --profile-replay -o $R/ncu.$lvl.kc.json > $R/ncu.$lvl.kc.csv 2> $R/ncu.$lvl.kc.err
  mark "ncu model $lvl rc=$?"
  timeout 150 $NCU --profile-from-start off --graph-profiling $lvl --cache-control none "${extra[@]}" --metrics $M --csv \
    $PYTHON traces/capture.py "${S[@]}" --cuda-graph --profile-replay --out $R/m > $R/ncu.$lvl.model.csv 2> $R/ncu.$lvl.model.err
  mark "done $lvl rc=$?"
done
find $R -name '*.kcplan' -delete; find $R -name '*.kcir' -delete
cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" $P
