#!/usr/bin/env python3
"""Session 16, call 6 (T5's graph): the prediction and the round's kernels against kc's graph
with lead-ins of 1 (kc run), 2, 4 and 8 steps, each round's transitions put in place of kc
run's, against the capture's own measurement of the model in the same call. Needs
`cargo build --release`. python3 docs/results/2026-11-27-session16/t5_depth.py
"""
import csv, json, os, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
w = tempfile.mkdtemp()
subprocess.run(["tar", "xJf", os.path.join(here, "call6-t5-kc-q.txz"), "-C", w], check=True)
base = os.path.join(w, "t5")
d = os.path.join(base, "t5_graph.kc", "t5_graph")
ctx = json.load(open(os.path.join(d, "plan.isolated.context.json")))
for k in (1, 2, 4, 8):
    f = os.path.join(d, "plan.isolated.context.json" if k == 1 else "plan.isolated.lead%d.json" % k)
    t = json.load(open(f))["isolated"]["transitions"]
    swap = dict(ctx, isolated=dict(ctx["isolated"], transitions=t))
    sp = os.path.join(w, "swap%d.json" % k)
    json.dump(swap, open(sp, "w"))
    out = os.path.join(w, "r%d" % k)
    subprocess.run(["target/release/kc", "report", os.path.join(d, "plan.graph.json"), "--isolated", sp,
                    "--reference", os.path.join(base, "reference.json"), "--reference-entry", "t5_graph",
                    "-o", out, "--json"], check=True, stdout=subprocess.DEVNULL)
    r = json.load(open(os.path.join(out, "report.json")))
    p = r["prediction"]
    rows = {int(x["unit"]): x for x in csv.DictReader(open(os.path.join(out, "units.csv")))}
    rk = {x["unit"]: x["round_us"] for x in t.get("round_unit_kernels", [])}
    common = [u for u, x in rows.items() if x["in_context_mean_us"] and u in rk]
    n = lambda u: int(rows[u]["invocations"])
    g = sum(float(rows[u]["in_context_mean_us"]) * n(u) for u in common)
    a = sum(rk[u] * n(u) for u in common)
    tv = t.get("round_timed_values") or {}
    print("lead-in %d steps: %2d lead-ins; prediction time %+.1f %%, energy %+.1f %% (plain %+.1f %%); "
          "round's kernels vs kc graph %+.1f %%, per unit median %.1f %%; %s (zeros %.1f -> %.1f %% while timed)" % (
              k, t["round_lead_ins"], p["error_pct"], p["energy_error_pct"], p["plain_error_pct"],
              100 * (a - g) / g, r["time"]["unit_round_vs_in_context_median_abs_pct"],
              "restoring: each launch from the model's values" if t.get("round_restoring") else "plain round",
              tv.get("zero_before_pct", float("nan")), tv.get("zero_after_pct", float("nan"))))
subprocess.run(["rm", "-rf", w])
