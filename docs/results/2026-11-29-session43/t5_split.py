"""T5's graph (session 43, call 3): the prediction's excess over kc's graph split into the
kernels' part and the gaps' part, per replay. Run from the repository root:
    python3 docs/results/2026-11-29-session43/t5_split.py
Reads call3-c-kc-zi.txz (kc run's results and report) and prints the split."""
import io
import json
import pathlib
import tarfile

here = pathlib.Path(__file__).parent
tar = tarfile.open(here / "call3-c-kc-zi.txz")
read = lambda p: json.load(io.TextIOWrapper(tar.extractfile(p)))
d = read("c/t5_graph.kc/t5_graph/plan.isolated.context.json")
r = read("c/t5_graph.kc/t5_graph/report/report.json")
g = read("c/t5_graph.kc/t5_graph/plan.graph.json")
ok = [u for u in d["units"] if u["status"] == "ok"]
n = {u["id"]: u["invocations"] for u in ok}
plain = sum(u["time_us"]["mean"] * u["invocations"] for u in ok)
busy_alone = sum(u["launches_verified"]["busy_us"] * u["invocations"] for u in ok)
t = d["isolated"]["transitions"]
round_kernels = sum((k["round_busy_us"] - k["alone_busy_us"]) * n[k["unit"]] for k in t["round_unit_kernels"])
gap_term = t["round_gap_extra_busy_us"] * t["total"]
f = r["fidelity"]
graph_us = g["graph"]["replay_us"]["mean"]
graph_busy = f["in_context_busy_us"]
kernels_pred = busy_alone + round_kernels
gaps_pred = plain - busy_alone + gap_term
print(f"per replay: kernels predicted {kernels_pred:.1f} us, in kc's graph {graph_busy:.1f} us ({kernels_pred - graph_busy:+.1f})")
if graph_us:
    print(f"gaps predicted {gaps_pred:.1f} us, in kc's graph {graph_us - graph_busy:.1f} us ({gaps_pred - (graph_us - graph_busy):+.1f});"
          f" kc's graph {graph_us:.1f} us a replay, {f['kernels_launched']} kernels")
    print(f"gaps a kernel: predicted {gaps_pred / f['kernels_launched']:.3f} us, kc's graph {(graph_us - graph_busy) / f['kernels_launched']:.3f} us")
