#!/usr/bin/env bash
# Captures a model and answers for it with `kc run` in the same call on the same GPU:
# traces/capture.py (trace + Execution Trace + the model's own eager and CUDA-graph time and
# energy, back to back), then `kc run TRACE --reference` (graph replay, the units in
# isolation with their energy, the transitions between units, the report with the plain sum
# and the prediction from parts against the model), then the model measured again
# (`capture.py --remeasure`) and the report written again with it, so that the model's energy
# is compared at the temperature kc's graph replay ran at (REMEASURE=0 skips both). On a GPU
# machine with a `--features torch` kc:
#
#   tools/capture_and_run.sh OUT NAME CAPTURE-ARGS...
#   tools/capture_and_run.sh out resnet50_b32 --model resnet50 --batch 32 --channels-last
#
# KC names the kc binary (default: kc on PATH); PYTHON the interpreter with torch; extra
# `kc run` options go in KC_RUN_ARGS. Everything lands in OUT/NAME.* and OUT/NAME/ (kc run's
# directory, its report in OUT/NAME/NAME/report/); OUT/NAME.time holds kc run's wall time.
set -euo pipefail
out=${1:?usage: capture_and_run.sh OUT NAME CAPTURE-ARGS...}
name=${2:?usage: capture_and_run.sh OUT NAME CAPTURE-ARGS...}
shift 2
kc=${KC:-kc}
py=${PYTHON:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tools/capture_inputs.sh
. "$here/tools/capture_inputs.sh"
start=$(date +%s%N)
# shellcheck disable=SC2086
"$kc" run "$out/$name.pt.trace.json.gz" "${inputs[@]}" --reference "$out/reference.json" \
    --reference-entry "$name" -o "$out/$name" --json ${KC_RUN_ARGS:-} > "$out/$name.run.json" 2> "$out/$name.run.log"
echo "$(( ($(date +%s%N) - start) / 1000000 )) ms" > "$out/$name.time"
run_dir="$out/$name/$name"
if [ "${REMEASURE:-1}" != 0 ] && [ -f "$run_dir/plan.graph.json" ]; then
    "$py" "$here/traces/capture.py" "$@" --name "$name" --out "$out" --remeasure >> "$out/$name.remeasure.log" 2>&1
    iso=$(ls "$run_dir"/plan.isolated.*.json 2>/dev/null | head -1)
    plan=$run_dir/plan.kcplan; [ -f "$plan" ] || plan=
    "$kc" report "$run_dir/plan.graph.json" ${iso:+--isolated "$iso"} ${plan:+--plan "$plan"} --reference "$out/reference.json" \
        --reference-entry "$name" -o "$run_dir/report" > "$out/$name.report.log" 2>&1
fi
[ -d "$out/$name" ] && find "$out/$name" -name '*.kcir' -delete
echo "$out/$name/$name/report/report.md"
