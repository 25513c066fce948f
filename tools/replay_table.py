#!/usr/bin/env python3
"""Table of whole-plan replay against the H100 reference (docs/MEASUREMENTS.md, issue 6).

Usage: tools/replay_table.py RESULTS_DIR [REFERENCE_JSON]
RESULTS_DIR holds NAME.graph.json and NAME.iso.json from `kc exec` (graph mode and
--isolated) for each trace named in the reference. Every figure is per model iteration:
the plans hold the trace's profiled iterations (reference `profiled_iterations`), so plan
totals are divided by that count. Errors are (kc - reference) / reference.
"""
import json
import os
import sys

res = sys.argv[1]
ref_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "traces", "h100", "reference.json")
ref = json.load(open(ref_path))["results"]


def err(a, b):
    return "" if a is None or b is None else f"{(a - b) / b * 100:+.1f} %"


def num(x, fmt="{:.1f}"):
    return "-" if x is None else fmt.format(x)


rows = []
for name, r in ref.items():
    gp, ip = os.path.join(res, name + ".graph.json"), os.path.join(res, name + ".iso.json")
    if not (os.path.exists(gp) and os.path.exists(ip)):
        continue
    g, i = json.load(open(gp)), json.load(open(ip))
    it = r.get("profiled_iterations", 1)
    G, I = g["graph"], i["isolated"]
    traced = G["replayed_traced_us"] + G["not_executed_traced_us"]
    tier3 = [u for u in g["units"] if u["tier"] == "3"]
    t3_traced = sum(u["traced_mean_us"] * u["invocations"] for u in tier3)
    t3_ok = sum(u["traced_mean_us"] * u["invocations"] for u in tier3 if u["status"] == "ok")
    graph_us = G["replay_us"]["mean"] / it
    iso_us = I["predicted_us"] / it
    cg = r.get("cuda_graph", {}).get("median_us")
    eager = r["eager"]["median_us"]
    e_graph = G["energy"]["per_item_j"]["mean"] * 1000 / it if G.get("energy") else None
    e_iso = I["predicted_energy_j"] * 1000 / it if I.get("predicted_energy_j") else None
    e_ref_key = "cuda_graph" if "energy_per_run_mj" in r.get("cuda_graph", {}) else "eager"
    e_ref = r[e_ref_key]["energy_per_run_mj"]
    rows.append(dict(
        name=name, share=G["replayed_traced_us"] / traced * 100,
        t3_share=(t3_ok / t3_traced * 100) if t3_traced else None,
        t3_units=f"{sum(1 for u in tier3 if u['status'] == 'ok')}/{len(tier3)}",
        kernel_sum=traced / it, replayed=G["replayed_traced_us"] / it, graph=graph_us, cg=cg, eager=eager, iso=iso_us,
        e_graph=e_graph, e_iso=e_iso, e_ref=e_ref, e_ref_key=e_ref_key))

print("| trace | traced GPU time replayed | tier-3 units ok (share of tier-3 time) | "
      "kernel sum us/iter | of it replayed | graph replay us/iter | vs replayed kernel sum | "
      "vs whole kernel sum | model CUDA graph us | vs it | model eager us | "
      "isolated sum us/iter | isolated vs graph |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for x in rows:
    print(f"| {x['name']} | {x['share']:.1f} % | {x['t3_units']} ({num(x['t3_share'])} %) | "
          f"{x['kernel_sum']:.1f} | {x['replayed']:.1f} | {x['graph']:.1f} | "
          f"{err(x['graph'], x['replayed'])} | {err(x['graph'], x['kernel_sum'])} | "
          f"{num(x['cg'])} | {err(x['graph'], x['cg'])} | {x['eager']:.1f} | {x['iso']:.1f} | "
          f"{err(x['iso'], x['graph'])} |")
print()
print("| trace | graph replay mJ/iter | isolated sum mJ/iter | isolated vs graph | "
      "reference mJ/iter (which run) | graph vs reference |")
print("|---|---|---|---|---|---|")
for x in rows:
    print(f"| {x['name']} | {num(x['e_graph'])} | {num(x['e_iso'])} | {err(x['e_iso'], x['e_graph'])} | "
          f"{x['e_ref']:.1f} ({x['e_ref_key']}) | {err(x['e_graph'], x['e_ref'])} |")
