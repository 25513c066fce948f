#!/bin/bash
# Issue 27 D5 on the H200: models captured and answered with kc run on the H200 (the
# prediction from parts there), and the H100 plans of the same models replayed on the H200
# against the model measured on the H200 (kc's cross-GPU answer), in the same call.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
xz -dkf .device/bin/kc-new.xz; chmod +x .device/bin/kc-new
export KC=$PWD/.device/bin/kc-new PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; shift
R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.csv 2>&1
cross() {
  local m=$1 p=.device/h100plans/$1.kcplan
  [ -f $p.xz ] || return 0
  xz -dkf $p.xz
  local d=$R/$m.h100plan s=$(date +%s); mkdir -p $d
  timeout ${TO:-200} $KC exec $p --verify -o $d/graph.json --json > $d/graph.log 2>&1
  timeout ${TO:-200} $KC exec $p --isolated --verify --energy-window 0.05 --energy-repeats 10 --energy-target 0.5 -o $d/iso.json --json > $d/iso.log 2>&1
  $KC report $d/graph.json --isolated $d/iso.json --plan $p --reference $R/reference.json --reference-entry $m -o $d/report --json > $d/report.json 2> $d/report.err
  echo "cross rc=$? $(( $(date +%s) - s )) s: $m" >> $R/times.txt
}
go() { if [ $SECONDS -gt ${BUDGET:-400} ]; then echo "skipped (time): $*" >> $R/times.txt; return; fi; local s=$(date +%s); timeout ${TO:-200} tools/capture_and_run.sh $R "$@" > /dev/null 2>$R/$1.err; echo "rc=$? $(( $(date +%s) - s )) s: $*" >> $R/times.txt; cross $1; }
case $P in
h1)
go resnet34_fp32_tf32_b16 --model resnet34 --batch 16 --dtype fp32 --tf32
go gpt2_6l_decode_b8_graph --model gpt2 --layers 6 --batch 8 --seq 256 --dtype fp16 --mode decode --cuda-graph
go t5_b4s256_bf16 --model t5 --batch 4 --seq 256 --dtype bf16
go mobilenet_v3_large_b64_fp16 --model mobilenet_v3_large --batch 64 --dtype fp16
go efficientnet_b0_b32_fp16 --model efficientnet_b0 --batch 32 --dtype fp16
;;
h2)
go efficientnet_b0_b32_fp16 --model efficientnet_b0 --batch 32 --dtype fp16
go resnet50_b32_cl_bf16 --model resnet50 --batch 32 --dtype bf16 --channels-last
;;
esac
cat $R/times.txt
find $R -name '*.kcir' -delete
cd $OUT && tar czf $P.tgz --exclude='*.pt.trace.json.gz' --exclude='*.et.json.gz' --exclude='*.inductor_cache.tar.gz' --exclude='*.kcplan' $P && rm -rf $P
ls -la $OUT
