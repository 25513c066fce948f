#!/usr/bin/env python3
"""Session 15's check, before the change, of stopping a unit's energy windows at two instead
of three (`MIN_WINDOWS_WITH_TARGET`), on session 14's thirteen runs (no GPU): for every unit
with windows, the first k >= 2 windows whose powers' relative standard error reaches the
unit's target (0.5 % / sqrt(its share of the traced time), as `kc run` sets it) stand in for
all its windows; the summed unit energy and its standard uncertainty, both ways.
Run from the repository root: python3 docs/results/h200-2026-11-26-session14/two_windows.py
"""
import glob, json, math, os, statistics as st, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
w = tempfile.mkdtemp()
for t in sorted(glob.glob(os.path.join(here, "call*.txz"))):
    subprocess.run(["tar", "xJf", t, "-C", w], check=True)
print("results | units | windows, three at least -> two at least | summed unit energy J | its standard uncertainty, % of it")
for f in sorted(glob.glob(os.path.join(w, "*/*.kc/*/plan.isolated.context.json"))):
    r = json.load(open(f))
    units = [u for u in r["units"] if u["status"] == "ok" and u.get("energy")]
    traced = sum(u["traced_mean_us"] * u["invocations"] for u in units)
    e3 = e2 = v3 = v2 = 0.0
    n3 = n2 = 0
    for u in units:
        p = [x["avg_power_w"] for x in r["windows"] if x["label"].startswith(f"unit {u['id']} ")]
        if len(p) < 2:
            continue
        target = 0.005 / math.sqrt(max(u["traced_mean_us"] * u["invocations"] / traced, 1e-12))
        k = next((j for j in range(2, len(p) + 1)
                  if st.stdev(p[:j]) / math.sqrt(j) / st.mean(p[:j]) <= target), len(p))
        e = u["invocations"] * u["energy"]["per_item_j"]["mean"]
        # Energy per item is each window's power times the timed duration: its mean scales
        # with the windows' mean power.
        e_k = e * st.mean(p[:k]) / st.mean(p)
        e3 += e
        e2 += e_k
        v3 += (e * st.stdev(p) / math.sqrt(len(p)) / st.mean(p)) ** 2
        v2 += (e_k * st.stdev(p[:k]) / math.sqrt(k) / st.mean(p[:k])) ** 2
        n3 += len(p)
        n2 += k
    part, name = f.split(os.sep)[-4], f.split(os.sep)[-2]
    print(f"{part}/{name} | {len(units)} | {n3} -> {n2} | {e3:.4f} -> {e2:.4f} ({100 * (e2 / e3 - 1):+.2f} %) | "
          f"{100 * math.sqrt(v3) / e3:.2f} -> {100 * math.sqrt(v2) / e2:.2f}")
