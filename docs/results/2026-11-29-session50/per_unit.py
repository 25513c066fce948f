"""Session 50 (session 49's script): per unit (deliverable 3), from the reports figures.py regenerated (run it
first): each answer's median |error| of the units alone against their kernels in kc's
graph, alone against the model's own graph, kc's graph against the model's, and the round
against kc's graph, and (session 50) the units measured after their lead-ins against kc's
graph.

    python3 docs/results/2026-11-29-session50/per_unit.py /tmp/w50
"""
import glob
import json
import statistics
import sys

for f in sorted(glob.glob(f"{sys.argv[1]}/r/*/*/*/report.json")):
    r = json.load(open(f))
    t = r["time"]
    rounds = [abs(u["round_vs_in_context_pct"]) for u in r["units"] if u.get("round_vs_in_context_pct") is not None]
    led = [abs(u["after_lead_in_vs_in_context_pct"]) for u in r["units"] if u.get("after_lead_in_vs_in_context_pct") is not None]
    g = lambda k: t.get(k)
    fmt = lambda x: "-" if x is None else f"{x:5.1f} %"
    print(f"{'/'.join(f.split('/')[-4:-1]):45s} alone vs kc's graph {fmt(g('unit_isolated_vs_in_context_median_abs_pct'))}; "
          f"alone vs the model's graph {fmt(g('unit_isolated_vs_model_graph_median_abs_pct'))}; "
          f"kc's graph vs the model's {fmt(g('unit_kc_graph_vs_model_graph_median_abs_pct'))}; "
          f"the round vs kc's graph {fmt(statistics.median(rounds) if rounds else None)} ({len(rounds)}); "
          f"after their lead-ins vs kc's graph {fmt(statistics.median(led) if led else None)} ({len(led)})")
