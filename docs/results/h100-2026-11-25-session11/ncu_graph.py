"""Whole-graph Nsight Compute counters of one replay: kc's graph (3 model iterations per
replay, divided by 3) against the model's own CUDA graph (one iteration).
Usage: python3 ncu_graph.py KC.csv MODEL.csv"""
import csv, sys


def rows(p):
    out = {}
    with open(p) as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        out.setdefault(r["ID"], {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    return out["0"]


k, m = rows(sys.argv[1]), rows(sys.argv[2])
for key in k:
    kv = k[key] / (1 if "pct" in key else 3)
    print(f"{key:70s} model {m[key]:16,.1f} kc per iteration {kv:16,.1f} {100 * (kv / m[key] - 1):+.1f}%")
