#!/bin/bash
# Session 15's figures again from its results files (no GPU), with the committed report:
# per model and GPU, the plain sum and kc's prediction from parts against the model's own
# CUDA graph measured in the same call (time / energy), kc's graph replay against it, per
# unit alone and in the round against kc's graph (median |error|), and `kc run`'s wall
# time, and the prediction with the round's slower kernels priced per switch (the results'
# `round_unit_kernels` left out, as kc priced them before session 14). Rows `*.h100plan` are the H100 plans replayed on the H200 against the H200's
# measurement of the model. Run from the repository root after `cargo build --release`:
# bash docs/results/2026-11-27-session15/rereport.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") w=$(mktemp -d)
for t in "$here"/call[1-5]-*.txz "$here"/call1[34]-*.txz; do tar xJf "$t" -C "$w"; done
ex='import json,sys
r=json.load(sys.stdin); p=r["prediction"]; t=r["time"]; m=r.get("model") or {}
g=lambda k: "%.1f %%" % t[k] if k in t else "-"
row=next((x for x in m.get("rows", []) if x["what"] == "kc graph replay"), {})
kc=row.get("time_vs_model_pct"); kce=row.get("energy_vs_model_pct")
print("%+.1f / %+.1f | %+.1f / %+.1f | %s | %s | %s" % (p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"], p["energy_error_pct"],
  "-" if kc is None else "%+.1f / %+.1f" % (kc, kce if kce is not None else float("nan")), g("unit_isolated_vs_in_context_median_abs_pct"), g("unit_round_vs_in_context_median_abs_pct")))'
ps='import json,sys; p=json.load(sys.stdin)["prediction"]; print("%+.1f / %+.1f" % (p["error_pct"], p["energy_error_pct"]))'
echo "call/model | plain Σ time / energy | prediction time / energy | kc graph vs model | alone vs kc graph | round vs kc graph | kc run | prediction, slower kernels per switch"
for d in h100/qwen2_train h100/vit_b16_tf32 h100/effnet_v2_s h200a/qwen2_train h200a/qwen2_train.h100plan h200a/vit_b16_tf32 h200a/vit_b16_tf32.h100plan h200b/effnet_v2_s h200b/effnet_v2_s.h100plan n/swin_s n/wide_resnet50 m/convnext_small m/resnet152 m/vit_l_16 m/regnet_x_3_2gf r/t5_graph r/mistral_decode_graph r/resnext50; do
  part=${d%%/*} n=${d#*/}; m=${n%.h100plan}
  if [ "$n" != "$m" ]; then dir=$w/$part/$n; else dir=$w/$part/$n.kc/$n; fi
  iso=$(ls $dir/plan.isolated.*.json | head -1)
  secs=$(grep -h "^$n rc=" $w/$part/summary.txt | sed 's/.* \([0-9]*\) ms/\1/' | awk '{printf "%.1f s", $1/1000}')
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); r['isolated']['transitions'].pop('round_unit_kernels', None); json.dump(r, open(sys.argv[2], 'w'))" $iso $w/per_switch.json
  c=$($KC report $dir/plan.graph.json --isolated $w/per_switch.json --reference $w/$part/reference.json --reference-entry $m -o $w/r2 --json | python3 -c "$ps")
  echo "$d | $($KC report $dir/plan.graph.json --isolated $iso --reference $w/$part/reference.json --reference-entry $m -o $w/r --json | python3 -c "$ex") | ${secs:--} | $c"
done
rm -rf "$w"
