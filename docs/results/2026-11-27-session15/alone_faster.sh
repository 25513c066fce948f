#!/bin/bash
# How much faster a unit alone runs than in kc's graph: per model, the median over its units
# of `isolated_vs_in_context_pct` (signed; alone − in context, over in context), from
# sessions 14 and 15's results files with the committed kc (no GPU). Runs whose replay
# lined up with the trace only in part (BLOOM's step, RegNetX) are left out. Run from the
# repository root after `cargo build --release`:
# bash docs/results/2026-11-27-session15/alone_faster.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") w=$(mktemp -d)
for t in "$here"/../h200-2026-11-26-session14/call*.txz; do tar xJf "$t" -C "$w"; done
for t in "$here"/call*-kc-*.txz; do tar xJf "$t" -C "$w"; done
for dir in "$w"/*/*.kc/*; do
  n=$(basename "$dir"); case $n in bloom_train|regnet_x_3_2gf) continue;; esac
  iso=$(ls $dir/plan.isolated.*.json 2>/dev/null | head -1); [ -n "$iso" ] || continue
  $KC report $dir/plan.graph.json --isolated $iso -o $w/r > /dev/null
  python3 -c "
import csv, statistics, sys
v = [float(r['isolated_vs_in_context_pct']) for r in csv.DictReader(open(sys.argv[1])) if r['isolated_vs_in_context_pct']]
print('%s | %+.1f %% over %d units' % (sys.argv[2], statistics.median(v), len(v)))" $w/r/units.csv "${dir#$w/}"
done
rm -rf "$w"
