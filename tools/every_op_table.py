#!/usr/bin/env python3
"""Issue 12 figures from one results folder: per model iteration, kc's graph replay over the
memory image vs the model's own CUDA graph (reference.json) and vs the traced kernel sum,
energy, the share of traced GPU time executed, and per unit isolated vs traced (median
|error|, time-weighted median, and the sum) for each cache state measured.

    tools/every_op_table.py RESULTS_DIR [--ref reference.json ...]

RESULTS_DIR holds graph/MODEL.graph.json and isolated/MODEL.iso.CACHE.json (kc exec).
"""
import glob, json, os, statistics, sys

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
res = args[0]


def pct(x, y):
    return f"{(x / y - 1) * 100:+.1f} %" if (x is not None and y) else "–"


def unit_errors(path):
    r = json.load(open(path))
    e = []
    for u in r["units"]:
        if u["status"] != "ok" or not u.get("time_us") or u["traced_mean_us"] <= 0:
            continue
        e.append((abs(u["time_us"]["mean"] / u["traced_mean_us"] - 1) * 100,
                  u["traced_mean_us"] * u["invocations"]))
    if not e:
        return None
    tot, acc, wmed = sum(w for _, w in e), 0.0, None
    for x, w in sorted(e):
        acc += w
        if acc >= tot / 2:
            wmed = x
            break
    iso = r["isolated"]
    return statistics.median(x for x, _ in e), wmed, iso["predicted_us"] / iso["executed_traced_us"] - 1


print("| model | executed | model CUDA graph us/iter | kc graph us/iter | Δ | vs traced sum | model mJ/iter | kc mJ/iter | Δ | non-finite |")
print("|---|---|---|---|---|---|---|---|---|---|")
models = sorted(os.path.basename(p)[:-len(".graph.json")] for p in glob.glob(os.path.join(res, "graph", "*.graph.json")))
for n in models:
    r = json.load(open(os.path.join(res, "graph", f"{n}.graph.json")))
    g = r["graph"]
    it = r["plan"].get("iterations") or 1
    kc_t = g["replay_us"]["p50"] / it
    traced = g["replayed_traced_us"] / it
    executed = g["replayed_traced_us"] / (g["replayed_traced_us"] + g["not_executed_traced_us"]) * 100
    e = g.get("energy") or {}
    kc_e = e.get("per_item_j", {}).get("mean")
    kc_e = kc_e * 1000 / it if kc_e else None
    cg = (refs.get(n) or {}).get("cuda_graph") or {}
    mt, me = cg.get("median_us"), cg.get("energy_per_run_mj")
    nf = (g.get("memory_image") or {}).get("nonfinite_share")
    print(f"| {n} | {executed:.1f} % | {mt and f'{mt:.1f}' or '–'} | {kc_t:.1f} | {pct(kc_t, mt)} | {pct(kc_t, traced)} "
          f"| {me and f'{me:.1f}' or '–'} | {kc_e and f'{kc_e:.1f}' or '–'} | {pct(kc_e, me)} | {nf is not None and f'{nf * 100:.1f} %' or '–'} |")
print()
caches = ["context", "warm", "cold"]
print("| model | " + " | ".join(f"{c}: median \\|err\\| / weighted / Σ vs traced" for c in caches) + " |")
print("|---|" + "---|" * len(caches))
for n in models:
    cells = []
    for c in caches:
        p = os.path.join(res, "isolated", f"{n}.iso.{c}.json")
        u = unit_errors(p) if os.path.exists(p) else None
        cells.append(f"{u[0]:.1f} % / {u[1]:.1f} % / {u[2] * 100:+.1f} %" if u else "–")
    print(f"| {n} | " + " | ".join(cells) + " |")
