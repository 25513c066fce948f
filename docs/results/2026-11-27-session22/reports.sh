# Sourced by bar.sh and ebar.sh (not run alone): every like-with-like answer of session 22
# (each model's own trace, and an H100 plan replayed on the H200: CALL.h100plan) reported
# again with the committed kc into a temporary folder `w`; `out` lists one answer a line:
# CALL NAME REPORT.json ISOLATED.json. Expects KC.
w=$(mktemp -d); out=$w/list; touch $out
for tx in docs/results/2026-11-27-session22/call*.txz; do
  c=$(basename $tx .txz); mkdir -p $w/$c; tar xJf $tx -C $w/$c 2>/dev/null
  for d in $w/$c/*/*.kc/* $w/$c/*/*.h100plan; do
    [ -f $d/plan.isolated.context.json ] || continue
    case $d in *.h100plan) part=$(dirname $d); n=$(basename $d .h100plan); c2=$c.h100plan ;; *) part=$(dirname $(dirname $d)); n=$(basename $d); c2=$c ;; esac
    $KC report $d/plan.graph.json --isolated $d/plan.isolated.context.json --reference $part/reference.json \
      --reference-entry $n -o $w/r/$c2/$n --json > /dev/null 2>&1 && echo "$c2 $n $w/r/$c2/$n/report.json $d/plan.isolated.context.json" >> $out
  done
done
