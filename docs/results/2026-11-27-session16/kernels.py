#!/usr/bin/env python3
"""Session 16: per model, Σ over units of each unit's kernels in the round × its invocations,
with lead-ins (`kc run`) and without (`--round-no-lead-in`, the same call), against the same
units' kernels in kc's graph of the model (CUPTI, units whose steps all matched the trace by
name; units.csv's in_context_mean_us). No GPU:
    python3 docs/results/2026-11-27-session16/kernels.py
"""
import csv, glob, json, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
w = tempfile.mkdtemp()
for t in sorted(glob.glob(os.path.join(here, "call[1-5]-*.txz"))):
    subprocess.run(["tar", "xJf", t, "-C", w], check=True)
print("%-22s %10s %10s %10s  %s" % ("model", "kc graph", "lead-in", "no lead", "round vs kc graph (lead-in / none)"))
for d in sorted(glob.glob(os.path.join(w, "*", "*.kc", "*"))):
    rows = {int(r["unit"]): r for r in csv.DictReader(open(os.path.join(d, "report", "units.csv")))}
    sums = []
    for f in ("plan.isolated.context.json", "plan.isolated.nolead.json"):
        t = json.load(open(os.path.join(d, f)))["isolated"]["transitions"]
        rk = {x["unit"]: x["round_us"] for x in t.get("round_unit_kernels", [])}
        sums.append(rk)
    common = [u for u, r in rows.items() if r["in_context_mean_us"] and all(u in s for s in sums)]
    if not common:
        print("%-22s (no units told apart in both rounds)" % os.path.basename(d))
        continue
    n = lambda u: int(rows[u]["invocations"])
    g = sum(float(rows[u]["in_context_mean_us"]) * n(u) for u in common)
    a, b = (sum(s[u] * n(u) for u in common) for s in sums)
    print("%-22s %10.1f %10.1f %10.1f  %+.1f / %+.1f %%  (%d units)" % (
        os.path.basename(d), g, a, b, 100 * (a - g) / g, 100 * (b - g) / g, len(common)))
subprocess.run(["rm", "-rf", w])
