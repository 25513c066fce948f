#!/bin/bash
# Session 29's figures, every report answered again by the committed kc from the calls'
# results files: each call's `kc run` times, each answer against the model's CUDA graph in
# the same call, with each unit reading the values its steps read in the model (at-steps)
# and what the whole pass left at its places (after-pass), the sentence that says which,
# the restore's and census's time and the units measured again from the model's values;
# then, per model answered both ways, the units alone in energy and time, at-steps against
# after-pass, and the bytes given back (plans kept by the calls, `stepbytes.py`).
# Run from the repository root after `cargo build --release`:
#   bash docs/results/2026-11-28-session29/figures.sh > docs/results/2026-11-28-session29/figures.txt
set -eu
KC=${KC:-target/release/kc}
r=$(dirname "$0") w=$(mktemp -d)
calls="call1-k-kc-d call2-l-kc-e call3-n-kc-f call4-o-kc-f"
for c in $calls; do
  mkdir -p $w/$c && tar xJf $r/$c.txz -C $w/$c
done
answer() { # CALL/PART NAME [KC-DIR]: the report's answer lines, as the committed kc gives them
  local dir=$w/$1/${3:-$2.kc}/$2
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$1/reference.json \
    --reference-entry $2 -o $w/r/$1/$2${3:+.$3} --json > /dev/null
  echo "== $1 $2${3:+ ($3)}"
  grep -E "^Each unit alone read|^\*\*Not a whole run|^\| (Σ isolated × count \(plain\)|\*\*prediction from parts|model, CUDA graph|kc graph replay)" \
    $w/r/$1/$2${3:+.$3}/report.md | sed -E 's/\(energy: [^)]*\) //' | cut -c1-200
  python3 - "$dir/plan.isolated.context.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
setup = {}
for u in a["units"]:
    for k, v in (u.get("setup_ms") or {}).items():
        setup[k] = setup.get(k, 0) + v
restoring = sum(1 for u in a["units"] if u.get("restoring"))
print("   isolated pass %s-%s; restore %.1f s, census %.1f s; %d units measured again from the model's values; %d windows"
      % (a["started"][11:19], a["finished"][11:19], setup.get("restore", 0) / 1e3, setup.get("census", 0) / 1e3, restoring, len(a["windows"])))
PY
}
both() { # CALL/PART NAME: the units alone, at-steps (NAME.kc or NAME.again.kc, as the run said) against after-pass
  python3 - $w/$1/$2.kc/$2/plan.isolated.context.json $w/$1/$2.again.kc/$2/plan.isolated.context.json "$1 $2" <<'PY'
import json, sys, statistics
a, b = (json.load(open(f)) for f in sys.argv[1:3])
def at_steps(x):
    return (x["isolated"].get("unit_values") or {}).get("at_steps", False)
if not at_steps(a):
    a, b = b, a
ub = {u["id"]: u for u in b["units"]}
rows = [(u, ub[u["id"]]) for u in a["units"]
        if u["id"] in ub and u.get("predicted_energy_j") is not None and ub[u["id"]].get("predicted_energy_j") is not None]
ea = sum(u["predicted_energy_j"] for u, _ in rows); eb = sum(v["predicted_energy_j"] for _, v in rows)
ta = sum(u["predicted_us"] for u, _ in rows); tb = sum(v["predicted_us"] for _, v in rows)
d = [100 * (u["predicted_energy_j"] / v["predicted_energy_j"] - 1) for u, v in rows]
print("== %s: %d units, at-steps against after-pass: energy %+.2f %%, time %+.2f %% (Σ × invocations as measured); per unit energy median %+.2f %%, median |diff| %.2f %%"
      % (sys.argv[3], len(rows), 100 * (ea / eb - 1), 100 * (ta / tb - 1), statistics.median(d), statistics.median(abs(x) for x in d)))
big = sorted(rows, key=lambda r: -r[0]["predicted_energy_j"])[:5]
for u, v in big:
    zb = (v.get("values") or {}).get("zero_before_pct"); za = (u.get("values") or {}).get("zero_before_pct")
    print("   unit %3d %-34s %.4f J against %.4f J (%+.1f %%); zeros at its places %s %% against %s %%"
          % (u["id"], u["label"][:34], u["predicted_energy_j"], v["predicted_energy_j"],
             100 * (u["predicted_energy_j"] / v["predicted_energy_j"] - 1),
             "-" if za is None else "%.1f" % za, "-" if zb is None else "%.1f" % zb))
PY
}
echo "# kc run, per call (summary.txt)"
for c in call1-k-kc-d/k call2-l-kc-e/l call3-n-kc-f/n call4-o-kc-f/o; do
  grep -E "rc=" $w/$c/summary.txt | sed "s|^|$c: |"
done
echo; echo "# The answers"
answer call1-k-kc-d/k gpt2_train_graph; answer call1-k-kc-d/k gpt2_train_graph gpt2_train_graph.again.kc
answer call1-k-kc-d/k resnet50_train_sgd
answer call2-l-kc-e/l resnet50_train_sgd; answer call2-l-kc-e/l resnet50_train_sgd resnet50_train_sgd.again.kc
answer call2-l-kc-e/l t5_graph
answer call3-n-kc-f/n t5_graph; answer call3-n-kc-f/n t5_graph t5_graph.again.kc
answer call3-n-kc-f/n densenet121
answer call4-o-kc-f/o densenet121
echo; echo "# The units alone, both ways on one capture"
both call1-k-kc-d/k gpt2_train_graph; both call2-l-kc-e/l resnet50_train_sgd; both call3-n-kc-f/n t5_graph
rm -rf "$w"
