#!/bin/bash
# Session 50 (session 49's script): every chart answer reported again by kc with the method's spread beside its
# bar (`kc report --method-spread answers.json`, this model's own answer left out by its
# reference entry), and the count of answers whose model lies outside ± 2 × (the repeats'
# u and the method's spread, combined), beside the bar alone. Run after chart.sh kept its
# results (W=DIR bash docs/results/2026-11-29-session50/chart.sh):
#   bash docs/results/2026-11-29-session50/method_spread.sh DIR
set -eu
W=$1 KC=${KC:-target/release/kc} S=$(dirname "$0")
for d in $W/r/*/*/*/; do
  rel=${d#$W/r/}; rel=${rel%/}; call=${rel%%/*}; rest=${rel#*/}; part=${rest%%/*}; n=${rest#*/}
  [[ $n == *.again ]] && src=$W/$call/$part/${n%.again}.again.kc/${n%.again} || src=$W/$call/$part/$n.kc/$n
  $KC report $src/plan.graph.json --isolated $src/plan.isolated.context.json --reference $W/$call/$part/reference.json \
    --reference-entry ${n%.again} --method-spread $S/answers.json -o $W/ms/$rel --json > $W/ms.json
  python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['prediction']; m=p['method_spread']; print(sys.argv[2], p['time_outside'], p['energy_outside'], m['time_outside'], m['energy_outside'], round(m['time_sd_pct'],3), round(m['energy_sd_pct'],3), m['left_out'])" $W/ms.json $rel
done > $W/ms.txt
python3 - $W/ms.txt <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
n = len(rows)
cnt = lambda i: sum(r[i] == "True" for r in rows)
sd = lambda i: (min(float(r[i]) for r in rows), max(float(r[i]) for r in rows))
print(f"{n} answers; the model outside the bar alone: time {cnt(1)}, energy {cnt(2)}; "
      f"with the method's spread beside it: time {cnt(3)}, energy {cnt(4)}; the spread "
      f"{sd(5)[0]:.3f}-{sd(5)[1]:.3f} % in time, {sd(6)[0]:.3f}-{sd(6)[1]:.3f} % in energy; "
      f"left out: {sorted(set(r[7] for r in rows))}")
PY
