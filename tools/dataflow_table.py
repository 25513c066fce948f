#!/usr/bin/env python3
"""Graph replay over the memory image vs on per-unit buffers vs the model's own CUDA graph.

    tools/dataflow_table.py RESULTS_DIR MODEL... [--ref reference.json ...]

RESULTS_DIR holds MODEL.graph.json (kc exec, memory image) and MODEL.graph.nodf.json
(kc exec --no-dataflow). References: ../shared/traces/h100, ../shared/examples/h100t2 and
any --ref files. Prints a Markdown table per model iteration (median replay / iterations).
"""
import json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
refs_files = [os.path.join(here, "../../shared/traces/h100/reference.json"),
              os.path.join(here, "../../shared/examples/h100t2/reference.json")]
while "--ref" in args:
    i = args.index("--ref")
    refs_files.append(args[i + 1])
    del args[i:i + 2]
refs = {}
for f in refs_files:
    d = json.load(open(f))
    refs.update(d.get("results", d))
res, models = args[0], args[1:]
d = lambda x, y: f"{(x / y - 1) * 100:+.1f} %" if (x is not None and y) else "–"
print("| model | dataflow | model CUDA graph us/iter | kc image | Δ | kc own buffers | Δ "
      "| model mJ/iter | kc image | Δ | kc own buffers | Δ | non-finite |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in models:
    cg = (refs.get(n) or {}).get("cuda_graph") or {}
    rt, re_ = cg.get("median_us"), cg.get("energy_per_run_mj")
    row = []
    mi = {}
    for suffix in ("graph", "graph.nodf"):
        p = os.path.join(res, f"{n}.{suffix}.json")
        if not os.path.exists(p):
            row.append((None, None))
            continue
        r = json.load(open(p))
        it = r["plan"].get("iterations") or 1
        g = r["graph"]
        mi = mi or (g.get("memory_image") or {})
        row.append((g["replay_us"]["p50"] / it, g["energy"]["per_item_j"]["mean"] * 1000 / it))
    (ta, ea), (tb, eb) = row
    f = lambda x: "–" if x is None else f"{x:.1f}"
    nf = mi.get("nonfinite_share")
    print(f"| {n} | {mi.get('derivation', '-')} | {f(rt)} | {f(ta)} | {d(ta, rt)} | {f(tb)} | {d(tb, rt)} "
          f"| {f(re_)} | {f(ea)} | {d(ea, re_)} | {f(eb)} | {d(eb, re_)} | "
          f"{'–' if nf is None else f'{nf * 100:.1f} %'} |")
