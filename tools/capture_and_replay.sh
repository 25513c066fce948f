#!/usr/bin/env bash
# Captures a model and replays it with kc in the same run on the same GPU, and writes the
# comparison: traces/capture.py (trace + Execution Trace + the model's own eager and
# CUDA-graph times, back to back, and energy), then kc ingest / lower / plan, kc exec in graph
# mode (with --verify and energy) and isolated (context cache), and kc report against the
# model's own measurement, with the model measured again right after kc's graph replay
# (`capture.py --remeasure`) so that its energy is compared at the temperature kc's ran at
# (REMEASURE=0 skips it). On a GPU machine with a `--features torch` kc:
#
#   tools/capture_and_replay.sh OUT NAME CAPTURE-ARGS...
#   tools/capture_and_replay.sh out swin_t_b16 --model swin_t --batch 16
#
# KC names the kc binary (default: kc on PATH); PYTHON the interpreter with torch.
# Everything lands in OUT/NAME.*; OUT/NAME.report/ holds the report.
set -euo pipefail
out=${1:?usage: capture_and_replay.sh OUT NAME CAPTURE-ARGS...}
name=${2:?usage: capture_and_replay.sh OUT NAME CAPTURE-ARGS...}
shift 2
kc=${KC:-kc}
py=${PYTHON:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tools/capture_inputs.sh
. "$here/tools/capture_inputs.sh"
"$kc" ingest "$out/$name.pt.trace.json.gz" "${inputs[@]}" -o "$out/$name.kcir" --json > "$out/$name.ingest.json"
"$kc" lower --tiers "$out/$name.kcir" -o "$out/$name.lowered.kcir" --json > "$out/$name.lower.json"
"$kc" plan "$out/$name.lowered.kcir" -o "$out/$name.kcplan" --json > "$out/$name.plan.json"
"$kc" exec "$out/$name.kcplan" --runs 100 --energy-window 1 --energy-repeats 3 --verify \
    -o "$out/$name.graph.json" > "$out/$name.graph.log" 2>&1
# The model again, right after kc's replay: the chip has warmed since the capture.
[ "${REMEASURE:-1}" = 0 ] || "$py" "$here/traces/capture.py" "$@" --name "$name" --out "$out" --remeasure \
    >> "$out/$name.remeasure.log" 2>&1
"$kc" exec "$out/$name.kcplan" --isolated --cache context --no-energy \
    -o "$out/$name.isolated.context.json" > "$out/$name.isolated.log" 2>&1
"$kc" report "$out/$name.graph.json" --isolated "$out/$name.isolated.context.json" \
    --plan "$out/$name.kcplan" --reference "$out/reference.json" --reference-entry "$name" \
    -o "$out/$name.report" > "$out/$name.report.log" 2>&1
rm -f "$out/$name.kcir" "$out/$name.lowered.kcir"
echo "$out/$name.report/report.md"
