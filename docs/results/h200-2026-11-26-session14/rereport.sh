#!/bin/bash
# The prediction of every model of session 14 again from its results files (no GPU): with
# the committed pricing (every term's time at the idle power), with the round's own energy
# for the switches (--switch-energy-from-round, kc before this session), and with the
# round's slower kernels priced per switch as before kc-f (the results' `round_unit_kernels`
# left out: the same run, the committed energy pricing). Run from the
# repository root after `cargo build --release`: bash docs/results/h200-2026-11-26-session14/rereport.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") w=$(mktemp -d)
for t in "$here"/call*.txz; do tar xJf "$t" -C "$w"; done
ex='import json,sys; p=json.load(sys.stdin)["prediction"]; print("%+.1f / %+.1f | %+.1f / %+.1f" % (p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"], p["energy_error_pct"]))'
echo "results | plain Σ time / energy | prediction (idle power) | prediction (--switch-energy-from-round) | prediction (slower kernels per switch)"
for d in a/llama_train a/t5_graph a/qwen2_train e/llama_train e/qwen2_train e/mistral_decode_graph g/swin_v2_t g/bloom_train g/regnet_y g/densenet121_tf32 h/maxvit_t h/gpt2_decode_graph h/resnext50; do
  part=${d%/*} n=${d#*/}; dir=$w/$part/$n.kc/$n
  iso=$(ls $dir/plan.isolated.*.json | head -1)
  r() { $KC report $dir/plan.graph.json --isolated $1 --reference $w/$part/reference.json --reference-entry $n -o $w/r "${@:2}" --json | python3 -c "$ex"; }
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); r['isolated']['transitions'].pop('round_unit_kernels', None); json.dump(r, open(sys.argv[2], 'w'))" $iso $w/per_switch.json
  a=$(r $iso); b=$(r $iso --switch-energy-from-round); c=$(r $w/per_switch.json)
  echo "$d | $a | ${b#* | } | ${c#* | }"
done
rm -rf "$w"
