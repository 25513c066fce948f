"""Session 50: the figures docs/MEASUREMENTS.md, README and the closing note give that no
other script prints, from the calls' results and the reports figures.py and chart.sh
regenerated (run both first):

    python3 docs/results/2026-11-29-session50/figures.py /tmp/w50
    W=/tmp/wc50 bash docs/results/2026-11-29-session50/chart.sh
    python3 docs/results/2026-11-29-session50/checks.py /tmp/w50 /tmp/wc50
"""
import csv
import glob
import json
import sys

W, C = sys.argv[1], sys.argv[2]


def results(call, part, name):
    return json.load(open(f"{W}/{call}/{part}/{name}.kc/{name}/plan.isolated.context.json"))


def report(call, part, name):
    return json.load(open(f"{W}/r/{call}/{part}/{name}/report.json"))


def units_csv(call, part, name):
    return {int(r["unit"]): r for r in csv.DictReader(open(f"{W}/r/{call}/{part}/{name}/units.csv"))}


# histc's functional form (call 1): copies per unit alone as traced, and kc's graph's
# copies and fills against the model's graph's.
d = results("call1-e-kc-zx", "e", "mixtral_decode_graph")
rec = [u["launches_verified"] for u in d["units"] if "copies_per_invocation" in (u.get("launches_verified") or {})]
same = sum(abs(l["copies_per_invocation"] - l.get("traced_copies_per_invocation", 0)) < 1e-9 for l in rec)
s = report("call1-e-kc-zx", "e", "mixtral_decode_graph")["graphs_side_by_side"]
print(f"Mixtral decode graph: copies as traced on {same} of {len(rec)} recorded units; copies and fills an "
      f"iteration, kc's graph {s['kc_copies']:.1f}, the model's graph {s['model_copies']}")

# The fused AdamWs in the round: Qwen3-MoE's step graph against kc's graph (calls 3 and 4),
# BLOOM's step graph and LLaMA's step against alone (call 3), and their rounds' values.
for call, part, name in [("call3-g-kc-zx", "g", "qwen3_moe_train_graph"), ("call4-h-kc-zy", "h", "qwen3_moe_train_graph"),
                         ("call3-g-kc-zx", "g", "bloom_train_graph"), ("call3-g-kc-zx", "g", "llama_train")]:
    for u in units_csv(call, part, name).values():
        if u["label"] != "aten::_fused_adamw_":
            continue
        ctx, pct, alone = float(u["in_context_mean_us"]), float(u["round_vs_in_context_pct"]), float(u["measured_mean_us"])
        rnd = ctx * (1 + pct / 100)
        v = results(call, part, name)["isolated"]["transitions"]["round_timed_values"]
        print(f"{call} {name}: AdamW (unit {u['unit']}) in the round {rnd:.1f} us, {pct:+.1f} % over kc's graph, "
              f"{100 * (rnd / alone - 1):+.1f} % over alone ({alone:.1f}); the round's non-finite "
              f"{v['nonfinite_before_pct']:.2f} -> {v['nonfinite_after_pct']:.2f} %, zeros {v['zero_before_pct']:.1f} -> {v['zero_after_pct']:.1f} %")

# ResNeXt-101 32x8d (call 2): the round's gap against kc's graph's gaps, and unit 39's
# records alone by step.
r = report("call2-f-kc-zx", "f", "resnext101")
d = results("call2-f-kc-zx", "f", "resnext101")
gaps = next(p["us"] for p in r["error_budget"]["parts"] if p["what"].startswith("launch and gaps in kc's graph"))
switches = d["isolated"]["transitions"]["total"]
print(f"ResNeXt-101: kc's graph's launch and gaps beyond its kernels {gaps:.1f} us a replay, "
      f"{gaps / switches:.2f} us over each of its {switches} switches")
u = next(x for x in d["units"] if x["id"] == 39)
k = next(x for x in d["isolated"]["transitions"]["round_unit_kernels"] if x["unit"] == 39)
steps = [s["busy_us"] for s in u["launches_verified"]["by_step"]]
term = u["invocations"] * (k["round_busy_us"] - k["alone_busy_us"])
print(f"  unit 39: busy alone at the round's step {steps[0]:.2f} us, at its other steps {min(steps[1:]):.2f}-"
      f"{max(steps[1:]):.2f}, timed {u['time_us']['mean']:.2f} us an invocation; in the round {k['round_busy_us']:.2f}; "
      f"its part of the round's term {term:+.1f} us a replay ({100 * term / r['prediction']['target_us']:+.2f} % of the model)")

# The bars the at-step records widened (chart.sh's reports).
for f in sorted(glob.glob(f"{C}/r/*/*/*/report.json")):
    p = json.load(open(f))["prediction"]
    a = p.get("at_step_u_us")
    if not a:
        continue
    u = p["predicted_u_us"]
    print(f"{f.split('/')[-2]:26s} bar +-{200 * u / p['target_us']:.2f} % (without the at-step records +-"
          f"{200 * (u * u - a * a) ** 0.5 / p['target_us']:.2f} %); the model {'outside' if p.get('time_outside') else 'inside'}")
