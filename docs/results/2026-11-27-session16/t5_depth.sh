#!/bin/bash
# Session 16, call 6: T5's graph, whose round's kernels run 5-15 % slower than in kc's graph
# with a lead-in of one step. The hypothesis: its activations are small, so the model's L2
# holds several steps' outputs and one step of lead-in reproduces only the last. After
# `kc run` (one step), isolated passes of the same plan without energy with lead-ins of 2, 4
# and 8 steps (`--round-lead-in-steps`); no remeasure (device time): the reference is the
# capture's own measurement in the same call. Binary kc-q in .device/bin.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-q}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD
out=$OUT/t5; mkdir -p $out; name=t5_graph n=t5_graph
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $out/gpu.csv 2>&1
mark() { echo "$(date -u +%H:%M:%S) $*" >> $out/timeline.txt; }
work() {
  mark capture; . tools/capture_inputs.sh --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
  mark "kc run"
  timeout 90 $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.kc --json > $out/$n.run.json 2> $out/$n.run.log
  local d=$out/$n.kc/$n
  for k in 2 4 8; do
    mark "lead-in $k"
    timeout 40 $kc exec $d/plan.kcplan --isolated --verify --no-energy --round-lead-in-steps $k \
      -o $d/plan.isolated.lead$k.json --json > $out/lead$k.log 2>&1
  done
  rm -f $d/plan.kcplan $d/*.kcir $d/report/replay.trace.json
}
timeout 175 bash -c "$(declare -f mark work); kc=$kc py=$py here=$here out=$out name=$name n=$n; work" || mark "stopped: $?"
cat $out/timeline.txt
cd $OUT && tar cJf t5.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" t5 && rm -rf t5
