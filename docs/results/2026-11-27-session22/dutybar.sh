#!/bin/bash
# Not adopted (session 22): the energy bar widened by the duty-cycle correction's own size
# (the capped units' energy as the duty cycle gave it against as their capped windows
# gave it, a rectangular spread between the two), over the like-with-like answers of
# sessions 18-21 (where it was tried) and 22 (out of sample), reported again with the
# committed kc: the model's energy inside the bar counted, the median bar, and the answers
# it moves inside. Run from the repository root after `cargo build --release`:
#   bash docs/results/2026-11-27-session22/dutybar.sh
set -eu
KC=${KC:-target/release/kc}; w=$(mktemp -d); out=$w/list; touch $out
for tx in docs/results/2026-11-27-session2[012]/call*.txz docs/results/2026-11-27-session1[89]/call*.txz; do
  c=$(basename $tx .txz); s=$(basename $(dirname $tx)); mkdir -p $w/$c; tar xJf $tx -C $w/$c 2>/dev/null
  for d in $w/$c/*/*.kc/* $w/$c/*/*.h100plan; do
    [ -f $d/plan.isolated.context.json ] || continue
    case $d in *.h100plan) part=$(dirname $d); n=$(basename $d .h100plan); c2=$c.h100plan ;; *) part=$(dirname $(dirname $d)); n=$(basename $d); c2=$c ;; esac
    $KC report $d/plan.graph.json --isolated $d/plan.isolated.context.json --reference $part/reference.json \
      --reference-entry $n -o $w/r/$c2/$n --json > /dev/null 2>&1 && echo "$s $c2 $n $w/r/$c2/$n/report.json" >> $out
  done
done
python3 - $out <<'PY'
import json, math, re, sys
rows = []
for l in open(sys.argv[1]):
    s, c, n, a = l.split()
    p = json.load(open(a)).get("prediction")
    if not p or p.get("energy_error_pct") is None or p.get("target_caveat"):
        continue
    te, tu, e, u = p["target_energy_j"], p.get("target_energy_u_j") or 0, p["predicted_energy_j"], p["predicted_energy_u_j"]
    m = re.search(r"([\d.]+) J per replay where alone at the cap they gave ([\d.]+) J", p.get("duty_energy") or "")
    d = abs(float(m.group(1)) - float(m.group(2))) if m else 0.0
    u2 = math.hypot(u, d / math.sqrt(12))
    err = e - te
    rows.append((s, c, n, 100 * err / te, 200 * u / te, 200 * u2 / te, abs(err) <= 2 * math.hypot(u, tu), abs(err) <= 2 * math.hypot(u2, tu), 100 * d / te))
for name, dev in (("sessions 18-21", ["2026-11-27-session18", "2026-11-27-session19", "2026-11-27-session20", "2026-11-27-session21"]), ("session 22", ["2026-11-27-session22"])):
    R = [r for r in rows if r[0] in dev]
    n = len(R)
    print("%s: %d answers; energy inside the bar %d, with the duty spread %d; median bar ±%.2f -> ±%.2f %%; answers with capped units %d" % (
        name, n, sum(r[6] for r in R), sum(r[7] for r in R), sorted(r[4] for r in R)[n // 2], sorted(r[5] for r in R)[n // 2], sum(r[8] > 0 for r in R)))
    for r in R:
        if r[6] != r[7]: print("   moved inside: %s %s err %+.1f bar ±%.2f -> ±%.2f (duty %.1f %%)" % (r[1], r[2], r[3], r[4], r[5], r[8]))
PY
rm -rf $w
