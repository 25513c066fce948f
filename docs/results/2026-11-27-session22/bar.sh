#!/bin/bash
# The time bar with the round's weighting, over session 22's like-with-like answers (its
# own traces' and the H100 plans replayed on the H200), reported again with the committed
# kc: the model inside the prediction's time bar (± 2 combined standard uncertainties)
# counted with the weighting component and without it (the repeats alone: predicted_u_us
# with weighting_u_us taken out), and the time within 2 % as predicted and with the round's
# extra per switch in place of its shares. Run from the repository root after
# `cargo build --release`:
#   bash docs/results/2026-11-27-session22/bar.sh
set -eu
KC=${KC:-target/release/kc}
. docs/results/2026-11-27-session22/reports.sh
python3 - $out <<'PY'
import json, math, sys
rows = []
for l in open(sys.argv[1]):
    c, name, path, iso = l.split()
    p = json.load(open(path)).get("prediction")
    if not p or p.get("error_pct") is None or p.get("target_caveat"):
        continue
    w = p.get("weighting_u_us") or 0.0
    tu = p.get("target_u_us") or 0.0
    err = p["predicted_us"] - p["target_us"]
    alone = math.sqrt(max(p["predicted_u_us"] ** 2 - w * w, 0.0))
    # The other estimate as the prediction: the round's extra per switch × the switches in
    # place of the switch terms (gaps and slower kernels).
    t = json.load(open(iso))["isolated"]["transitions"]
    switch = sum(x["us"] for x in p["terms"] if x["what"].startswith(("gaps", "kernels slower", "switches")))
    per_switch = p["predicted_us"] - switch + (t.get("round_extra_us") or 0.0) * t["total"]
    rows.append((c, name, 100 * err / p["target_us"], 200 * p["predicted_u_us"] / p["target_us"],
                 200 * w / p["target_us"], not p["time_outside"], abs(err) <= 2 * math.hypot(alone, tu),
                 200 * alone / p["target_us"], 100 * (per_switch / p["target_us"] - 1)))
for r in rows:
    print("%-16s %-28s error %+5.1f %%, bar ± %.2f %% (weighting ± %.2f %%)%s" % (r[:5] + ("" if r[5] else ", outside",)))
n = len(rows)
med = lambda k: sorted(r[k] for r in rows)[n // 2]
print("inside the time bar: %d of %d with the weighting (median bar ± %.2f %%), %d with the repeats alone (± %.2f %%)" % (
    sum(r[5] for r in rows), n, med(3), sum(r[6] for r in rows), med(7)))
print("within 2 %% in time: %d of %d as predicted (shares by unit), %d with the round's extra per switch instead" % (
    sum(abs(r[2]) <= 2 for r in rows), n, sum(abs(r[8]) <= 2 for r in rows)))
PY
rm -rf $w
