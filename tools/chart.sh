#!/bin/bash
# The README's chart (docs/prediction.svg) from the answers listed in
# docs/results/chart_answers.tsv: each answer's results reported again with the kc given
# (KC, target/release/kc by default), the chart drawn (tools/prediction_chart.py), the
# counts the README quotes printed (session 21's counts.py), and the answers' errors
# written for `kc report --method-spread` (tools/prediction_residuals.py) to ANSWERS
# (docs/results/answers.json unless given). Run from the repository root after
# `cargo build --release`:
#   bash tools/chart.sh [ANSWERS.json] [DESCRIPTION]
# With W=DIR the results and their reports are kept there (DIR/r/CALL/PART/NAME/report.json).
# Sessions before 54 each kept a chart.sh of their own with the list inside; a session
# that answers models again now edits the list.
set -eu
KC=${KC:-target/release/kc}
R=docs/results
list=$R/chart_answers.tsv
answers=${1:-$R/answers.json}
what=${2:-"the H200 chart, $(grep -vc '^#' $list) answers ($list)"}
w=${W:-$(mktemp -d)}
# Each call's archive once.
grep -v '^#' $list | cut -f2,3 | sort -u | while IFS=$'\t' read -r dir call; do
  [ -d "$w/$call" ] || { mkdir -p "$w/$call"; tar xJf "$R/$dir/$call.txz" -C "$w/$call"; }
done
args=()
while IFS=$'\t' read -r label dir call part name; do
  d=$w/$call/$part/$name.kc/$name
  $KC report $d/plan.graph.json --isolated $d/plan.isolated.context.json --reference $w/$call/$part/reference.json \
    --reference-entry $name -o $w/r/$call/$part/$name --json > /dev/null
  args+=("$label=$w/r/$call/$part/$name/report.json")
done < <(grep -v '^#' $list)
python3 tools/prediction_chart.py --device H200 docs/prediction.svg "${args[@]}"
# The counts the README quotes.
python3 $R/2026-11-27-session21/counts.py "${args[@]}"
# The answers' errors, for `kc report --method-spread` (session 49).
python3 tools/prediction_residuals.py "$answers" "$what" "${args[@]}"
echo "${#args[@]} answers"
[ -n "${W:-}" ] || rm -rf "$w"
