#!/bin/bash
# Not adopted (session 21), tested again out of sample: the kernels that ran faster in the
# round (a negative slower-kernels term) priced at the units' own mean power (Σ isolated
# energy / Σ isolated time) instead of the idle power, over session 22's like-with-like
# answers reported again with the committed kc; the energy within 3 % counted and the
# answers it moves across 3 % named. Run from the repository root after
# `cargo build --release`:
#   bash docs/results/2026-11-27-session22/ebar.sh
set -eu
KC=${KC:-target/release/kc}
. docs/results/2026-11-27-session22/reports.sh
python3 - $out <<'PY'
import json, sys
rows = []
for l in open(sys.argv[1]):
    c, n, a, _ = l.split()
    p = json.load(open(a)).get("prediction")
    if not p or p.get("energy_error_pct") is None or p.get("target_caveat"):
        continue
    te, e = p["target_energy_j"], p["predicted_energy_j"]
    k = [x for x in p["terms"] if x["what"].startswith("kernels slower")]
    ku = sum(x["us"] for x in k); ke = sum(x["energy_j"] for x in k)
    busy = p["plain_energy_j"] / (p["plain_us"] * 1e-6)
    fast = e - ke + busy * ku * 1e-6 if ku < 0 else e
    rows.append((c, n, 100 * (e / te - 1), 100 * (fast / te - 1)))
for r in rows:
    print("%-22s %-24s energy %+5.1f %%, faster kernels at their power %+5.1f %%" % r)
moved = [r for r in rows if (abs(r[2]) <= 3) != (abs(r[3]) <= 3)]
print("energy within 3 %%: %d of %d as predicted, %d with faster kernels at their power; moved across 3 %%: %s" % (
    sum(abs(r[2]) <= 3 for r in rows), len(rows), sum(abs(r[3]) <= 3 for r in rows),
    ", ".join("%s %s %+.1f -> %+.1f" % m for m in moved) or "none"))
PY
rm -rf $w
