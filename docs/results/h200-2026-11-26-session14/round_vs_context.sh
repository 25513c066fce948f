#!/bin/bash
# Deliverable 3 of issue 27 from session 14's results files (no GPU): per unit, the unit
# alone (CUPTI) and the unit in the round (CUPTI, by unit) against its kernels in kc's
# graph, median |error| over the units (kc report's `unit_isolated_vs_in_context_median_abs_pct`
# and `unit_round_vs_in_context_median_abs_pct`). The first three of call 1 (kc-e) have no
# round by unit. Run from the repository root after `cargo build --release`:
# bash docs/results/h200-2026-11-26-session14/round_vs_context.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") w=$(mktemp -d)
for t in "$here"/call*.txz; do tar xJf "$t" -C "$w"; done
ex='import json,sys; t=json.load(sys.stdin)["time"]; f=lambda k: "%.1f %%" % t[k] if k in t else "-"; print("%s (%s units) | %s (%s units)" % (f("unit_isolated_vs_in_context_median_abs_pct"), t.get("units_isolated_vs_in_context","-"), f("unit_round_vs_in_context_median_abs_pct"), t.get("units_round_vs_in_context","-")))'
echo "results | alone vs in kc's graph, median abs | in the round vs in kc's graph, median abs"
for d in e/llama_train e/qwen2_train e/mistral_decode_graph g/swin_v2_t g/bloom_train g/regnet_y g/densenet121_tf32 h/maxvit_t h/gpt2_decode_graph h/resnext50; do
  part=${d%/*} n=${d#*/}; dir=$w/$part/$n.kc/$n
  iso=$(ls $dir/plan.isolated.*.json | head -1)
  echo "$d | $($KC report $dir/plan.graph.json --isolated $iso -o $w/r --json | python3 -c "$ex")"
done
rm -rf "$w"
