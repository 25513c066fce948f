# Sourced by a session's docs/results/<date>-sessionN/run.sh on the device machine (not run
# alone): the environment a GPU call needs and the two measurements sessions repeat, so a
# session's script holds only its parts. Sets up libtorch's libraries (gpu/NOTES.md),
# unpacks the binary KC from .device/bin, makes $OUT/$P, starts nvidia-smi sampling clocks
# and power every 200 ms (smi.csv), and defines:
#   mark TEXT            a line in timeline.txt
#   over_budget          true once BUDGET seconds (default 300) have passed since sourcing
#   ways PLANS WAY...    per plan in .device/plans: kc's graph (--verify, three launches back
#                        to back, time only), then the isolated pass once per WAY
#                        ("name:flags"), each unit also recorded in the model's cache state
#   twice NAME ARGS...   captured with traces/capture.py ARGS once, answered by `kc run
#                        --reference` once per way in ORDER ("name:flags", default "kc:
#                        full:--energy-full-queue"; RUN_FLAGS added to each) into NAME.<way>
#                        (logs NAME.<way>.run.*), the model measured again (--remeasure) in
#                        the same call after them unless NO_REMEASURE, each way reported
#                        against it; the first way's plan kept under plans/
#   model NAME ARGS...   `twice` with kc's defaults alone (ORDER="kc:"; before session
#                        55's reading its logs were NAME.run.*)
#   finish               stops the sampling and tars $OUT/$P into $OUT/$P.txz
# Expects P (the part) set.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:?binary in .device/bin}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC
out=$OUT/$P; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version,power.limit --format=csv > $out/gpu.csv 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 200 > $out/smi.csv 2>&1 & SMI=$!
T0=$(date +%s)
py=/opt/torch/.venv/bin/python here=$PWD
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $out/timeline.txt; }
over_budget() { [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; }
ways() {
  local plans=$1; shift
  for n in $plans; do
    p=.device/plans/$n.kcplan; xz -dkf $p.xz; s=$(date +%s%N)
    if over_budget; then mark "skip $n (time)"; continue; fi
    mark "graph $n"
    timeout 100 $kc exec $p --verify --no-energy --runs 50 -o $out/$n.graph.json --json > $out/$n.graph.log 2>&1
    echo "graph $n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
    for way in "$@"; do
      w=${way%%:*}; flags=${way#*:}
      if over_budget; then mark "skip $n $w (time)"; continue; fi
      mark "cache $n $w"; s=$(date +%s%N)
      timeout 150 $kc exec $p --isolated --verify --no-energy --no-parts --no-lead-in-units $flags \
        -o $out/$n.iso.$w.json --json > $out/$n.iso.$w.log 2>&1
      echo "cache $n $w rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
    done
  done
}
model() { ORDER="kc:" twice "$@"; }
twice() {
  local n=$1; shift
  local order=${ORDER:-kc: full:--energy-full-queue}
  if over_budget; then mark "skip $n (time)"; return; fi
  args=("$@"); name=$n
  mark "capture $n"
  . tools/capture_inputs.sh "$@"
  local ways_run=() way w flags s d
  for way in $order; do
    w=${way%%:*}; flags=${way#*:}; [[ $way == *:* ]] || flags=; ways_run+=($w)
    mark "kc run $n $w"; s=$(date +%s%N)
    timeout ${RUN_TIMEOUT:-200} $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
      --reference-entry $n -o $out/$n.$w $flags ${RUN_FLAGS:-} --json > $out/$n.$w.run.json 2> $out/$n.$w.run.log
    echo "$n $w rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  done
  if [ -z "${NO_REMEASURE:-}" ]; then
    mark "remeasure $n"
    $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  fi
  for w in "${ways_run[@]}"; do
    d=$out/$n.$w/$n
    $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --plan $d/plan.kcplan --reference $out/reference.json \
      --reference-entry $n -o $d/report > $out/$n.$w.report.log 2>&1
    rm -f $d/*.kcir $d/report/replay.trace.json
  done
  mkdir -p $out/plans && xz -3 -c $out/$n.${ways_run[0]}/$n/plan.kcplan > $out/plans/$n.kcplan.xz
  rm -f $out/$n.*/$n/plan.kcplan $out/*.pt.trace.json.gz $out/*.et.json.gz $out/*.values.bin
}
finish() {
  kill $SMI 2>/dev/null
  cat $out/summary.txt $out/timeline.txt
  (cd $OUT && tar cJf $P.txz $P && rm -rf $P)
}
