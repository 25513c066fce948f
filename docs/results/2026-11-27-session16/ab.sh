#!/bin/bash
# Session 16's figures from the tarballs, with the committed kc (no GPU): per model the
# plain Σ isolated × count, kc's prediction from parts with the round of lead-ins (what
# `kc run` measured), and the same prediction with the round without lead-ins that the
# same call measured right after (`--round-no-lead-in`, its transitions put in place of
# the first's), each against the model's own CUDA graph measured in the same call.
# Run from the repository root after `cargo build --release`:
#   bash docs/results/2026-11-27-session16/ab.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") w=$(mktemp -d)
for t in "$here"/call[1-5]-*.txz; do tar xJf "$t" -C "$w"; done
printf "%-20s %-15s %-15s %-15s %-9s %-7s %s\n" model "plain t/e %" "lead-in t/e %" "no lead t/e %" "kc graph" "kc run" "round vs kc graph, per unit median |%| (lead-in / none)"
for d in "$w"/*/*.kc/*; do
  n=$(basename "$d"); part=$(basename "$(dirname "$(dirname "$d")")")
  [ -f "$d/plan.isolated.nolead.json" ] || { echo "$n: no comparison pass"; continue; }
  python3 - "$d/plan.isolated.context.json" "$d/plan.isolated.nolead.json" "$w/$n.swap.json" <<'PY'
import json, sys
ctx, nolead = (json.load(open(p)) for p in sys.argv[1:3])
ctx["isolated"]["transitions"] = nolead["isolated"]["transitions"]
json.dump(ctx, open(sys.argv[3], "w"))
PY
  for v in lead nolead; do
    iso=$d/plan.isolated.context.json; [ $v = nolead ] && iso=$w/$n.swap.json
    $KC report "$d/plan.graph.json" --isolated "$iso" --reference "$w/$part/reference.json" \
      --reference-entry "$n" -o "$w/r/$n.$v" --json > /dev/null
  done
  ms=$(grep -o "^$n rc=0 [0-9]*" "$w/$part/summary.txt" | awk '{print $3/1000}')
  python3 - "$w/r/$n.lead/report.json" "$w/r/$n.nolead/report.json" "$n" "$ms" "$w/rows.jsonl" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def te(p, k):
    return "%+.1f/%+.1f" % (p[k + "error_pct"], p[k + "energy_error_pct"])
pa, pb = a["prediction"], b["prediction"]
kc_graph = 100 * (a["time"]["actual_us"] - pa["target_us"]) / pa["target_us"]
f = lambda r: r["time"].get("unit_round_vs_in_context_median_abs_pct")
print("%-20s %-15s %-15s %-15s %-9s %-7s %s / %s" % (sys.argv[3],
      "%+.1f/%+.1f" % (pa["plain_error_pct"], pa["plain_energy_error_pct"]),
      te(pa, ""), te(pb, ""), "%+.1f" % kc_graph,
      "%.1f s" % float(sys.argv[4]), *("%.1f" % f(r) if f(r) is not None else "-" for r in (a, b))))
with open(sys.argv[5], "a") as out:
    out.write(json.dumps({"plain": [pa["plain_error_pct"], pa["plain_energy_error_pct"]],
                          "lead": [pa["error_pct"], pa["energy_error_pct"]],
                          "nolead": [pb["error_pct"], pb["energy_error_pct"]],
                          "round_vs_graph": [f(a), f(b)], "kc_run_s": float(sys.argv[4]),
                          "outside": [pa["time_outside"], pa["energy_outside"]]}) + "\n")
PY
done
python3 - "$w/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = len(rows)
for k in ("plain", "lead", "nolead"):
    t = sum(abs(r[k][0]) <= 2.0 for r in rows)
    e = sum(abs(r[k][1]) <= 3.0 for r in rows)
    print("%-7s time within 2 %%: %d of %d; energy within 3 %%: %d of %d; both: %d" % (
        k, t, n, e, n, sum(abs(r[k][0]) <= 2.0 and abs(r[k][1]) <= 3.0 for r in rows)))
for i, k in enumerate(("lead-in", "no lead-in")):
    v = sorted(r["round_vs_graph"][i] for r in rows if r["round_vs_graph"][i] is not None)
    print("round vs kc graph per unit (%s): %.1f-%.1f %% over %d models; within 3 %%: %d" % (
        k, v[0], v[-1], len(v), sum(x <= 3.0 for x in v)))
print("lead-in: the model outside the prediction ± 2u in time on %d of %d, in energy on %d" % (
    sum(bool(r["outside"][0]) for r in rows), n, sum(bool(r["outside"][1]) for r in rows)))
s = sorted(r["kc_run_s"] for r in rows)
print("kc run: %.1f-%.1f s" % (s[0], s[-1]))
PY
rm -rf "$w"
