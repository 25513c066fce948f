#!/usr/bin/env python3
"""Session 23, no GPU: where the gap term's noise comes from. For every answer of sessions
22 and 23 (their calls' tarballs), the round's timed cycle (event-timed launches less the
restoring copy timed alone, per cycle) against its CUPTI-recorded span per cycle (the
recorded launches' kernels, from each cycle's first kernel to its last; no copy), and
that difference over a launch (× cycles) beside the copy alone and the gap term. Run from
the repository root:
    python3 docs/results/2026-11-27-session23/gapnoise.py"""
import glob, json, os, subprocess, tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
w = tempfile.mkdtemp()
rows = []
for s in ["2026-11-27-session22", "2026-11-27-session23"]:
    for t in sorted(glob.glob(os.path.join(root, s, "call*.txz"))):
        d = os.path.join(w, s, os.path.basename(t)[:-4])
        os.makedirs(d)
        subprocess.run(["tar", "xJf", t, "-C", d], check=True)
        for f in sorted(glob.glob(os.path.join(d, "*", "*.kc", "*", "plan.isolated.context.json"))):
            iso = json.load(open(f))
            t_ = (iso.get("isolated") or {}).get("transitions") or {}
            if t_.get("round_recorded_span_us") is None or t_.get("round_cycle_us") is None:
                continue
            r = t_.get("round_restoring") or {}
            n = t_["round_cycles"]
            diff = t_["round_cycle_us"] - t_["round_recorded_span_us"]
            rows.append((os.path.basename(os.path.dirname(f)), s[-9:] + "/" + os.path.basename(d)[:12],
                         t_["round_switches"], n, r.get("copy_us", 0.0), t_["round_cycle_us"],
                         t_["round_recorded_span_us"], diff, diff * n, t_.get("round_gap_extra_us")))
print("%-24s %-26s %5s %4s %8s %8s %8s %7s %8s %6s" % (
    "model", "call", "sw/c", "cyc", "copy us", "cycle", "rec span", "diff", "x cycles", "gap"))
for r in sorted(rows):
    print("%-24s %-26s %5d %4d %8.0f %8.1f %8.1f %+7.1f %+8.0f %+6.2f" % r)
