"""Session 52, call 2 (kc-zz8): the record in the model's cache state five ways in one call
on four kept plans, each against kc's graph of the same call (--verify, the mean of three
launches back to back): kc's way (twice: `kc`, `kc2`, for the call's own spread), the
operands libtorch holds outside the image left evicted (`held_evicted`), that and the
distances summed (`s51`, session 51's way), and kc's way with a one-sector touch just before
each invocation (`small_pred`). Per model and way: the units' median |error| against kc's
graph (signed median in brackets), over every unit, over those with an operand outside the
image and over the rest; then per way, the median over units of |this way - kc| and
|kc2 - kc| (the spread between two records alike).

    python3 docs/results/2026-11-30-session52/ways.py > docs/results/2026-11-30-session52/ways.txt
"""
import glob
import json
import os
import statistics as st
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
ways = ["kc", "kc2", "held_evicted", "s51", "small_pred"]


def errors(graph, iso):
    g = json.load(open(graph))
    ctx = {u["unit"]: u for u in g["graph"]["fidelity"]["units"]}
    out = {}
    for u in json.load(open(iso))["units"]:
        m = (u.get("launches_verified") or {}).get("in_model_cache")
        c = ctx.get(u["id"])
        if m and c and c["in_context_us"] > 0:
            out[u["id"]] = (100 * (m["kernels_us"] / (c["in_context_us"] / c["steps"]) - 1),
                            (m.get("outside_image_operands") or 0) > 0)
    return out


def med(x):
    return f"{st.median(map(abs, x)):4.1f} % ({st.median(x):+5.1f}, {len(x):3d})" if x else "    -"


with tempfile.TemporaryDirectory() as w:
    tarfile.open(f"{here}/call2-w-kc-zz8.txz").extractall(w, filter="data")
    for graph in sorted(glob.glob(f"{w}/w/*.graph.json")):
        n = os.path.basename(graph)[: -len(".graph.json")]
        e = {k: errors(graph, f"{w}/w/{n}.iso.{k}.json") for k in ways
             if os.path.exists(f"{w}/w/{n}.iso.{k}.json")}
        print(f"## {n}: median |error| (signed, units): every unit | an operand outside the image | the rest")
        for k, v in e.items():
            vals = list(v.values())
            print(f"  {k:13s} {med([x for x, _ in vals])} | {med([x for x, o in vals if o])} | "
                  f"{med([x for x, o in vals if not o])}")
        base = e["kc"]
        for k in ways[1:]:
            if k in e:
                d = [abs(e[k][u][0] - base[u][0]) for u in base if u in e[k]]
                print(f"  |{k} - kc| per unit: median {st.median(d):4.1f} points")
        print()
