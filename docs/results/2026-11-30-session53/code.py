"""Session 53, call 1 (issue 27, deliverable 3): each unit in the model's cache state as kc
records it (`kc`) and with a kernel of 384 KiB of straight-line code on every SM before each
invocation (`code`, --model-cache-code-evicted), against its kernels in kc's graph of the
same call. Each way's results are reported again here (`kc report`, no plan needed) with
the kc binary given. Per model and way: the units' median |error| in the model's cache
state (signed median in brackets), how many within 3 %, the sum over units (kernels x
invocations) against kc's graph; then the same split by the units' length in kc's graph
(under 3 us, 3-20 us, over 20 us); then, per unit of the decode graphs, both ways.

The other calls of the session through the same script (`code.txt` holds all four):
call 2 (kc-zz12, run.sh part b) with the code evicted where the model's is far (kc's default
since), call 5 (kc-zz13, part d) that and with the GPU's address translation caches turned
over too (`tlb`, --model-cache-tlb-evicted), call 6 (kc-zz14, part e) that and with a kernel
taking all the shared memory a block may have on every SM just before each invocation
(`smem`, --model-cache-smem-predecessor).

    cargo build --release
    S=docs/results/2026-11-30-session53
    (python3 $S/code.py target/release/kc call1-a-kc-zz11 a kc code
     python3 $S/code.py target/release/kc call2-b-kc-zz12 b far
     python3 $S/code.py target/release/kc call5-d-kc-zz13 d far tlb
     python3 $S/code.py target/release/kc call6-e-kc-zz14 e far smem) > $S/code.txt
"""
import glob
import json
import os
import statistics as st
import subprocess
import sys
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
kc, call, part = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
ways = sys.argv[4:] or ["kc", "code"]
bands = [(0, 3, "under 3 us"), (3, 20, "3-20 us"), (20, 1e9, "over 20 us")]


def med(x):
    return f"{st.median(map(abs, x)):4.1f} % ({st.median(x):+5.1f}, {len(x):3d})" if x else "        -         "


with tempfile.TemporaryDirectory() as w:
    tarfile.open(f"{here}/{call}.txz").extractall(w, filter="data")
    per = {}
    for g in sorted(glob.glob(f"{w}/{part}/*.graph.json")):
        n = os.path.basename(g)[: -len(".graph.json")]
        for way in ways:
            iso = f"{w}/{part}/{n}.iso.{way}.json"
            if not os.path.exists(iso):
                continue
            out = f"{w}/rep/{n}.{way}"
            subprocess.run([kc, "report", g, "--isolated", iso, "-o", out], check=True, capture_output=True)
            r = json.load(open(f"{out}/report.json"))
            cache = {u["id"]: (u.get("launches_verified") or {}).get("in_model_cache")
                     for u in json.load(open(iso))["units"]}
            us = [u for u in r["units"] if u.get("in_model_cache_vs_in_context_pct") is not None]
            per.setdefault(n, {})[way] = {u["id"]: (u["label"], u["in_context_mean_us"], u["invocations"],
                                                   u["in_model_cache_vs_in_context_pct"], cache[u["id"]]["kernels_us"])
                                          for u in us}
    print(f"# {call}: ways {', '.join(ways)}")
    print("## per model: median |error| in the model's cache state against kc's graph (signed median, units)")
    within = {way: 0 for way in ways}
    for n, by in per.items():
        for way, us in by.items():
            e = [v[3] for v in us.values()]
            ctx = sum(v[1] * v[2] for v in us.values())
            rec = sum(v[4] * v[2] for v in us.values())
            within[way] += st.median(map(abs, e)) <= 3
            print(f"{n:26s} {way:5s} {med(e)}, {sum(abs(x) <= 3 for x in e):3d} within 3 %; in sum {100 * (rec / ctx - 1):+5.1f} %;  "
                  + "; ".join(f"{b}: {med([v[3] for v in us.values() if lo <= v[1] < hi])}" for lo, hi, b in bands))
    print("median |error| within 3 %: " + ", ".join(
        f"{way} on {k} of {sum(way in by for by in per.values())} models" for way, k in within.items()))
    for n in ("mistral_decode_graph", "mixtral_decode_graph", "gpt2_decode_graph"):
        if n not in per or not all(w_ in per[n] for w_ in ways):
            continue
        print(f"\n## {n}: per unit, kc's graph (us), then each way's record (us) and error")
        a = per[n][ways[0]]
        for i, (label, ctx, inv, _, _) in a.items():
            print(f"{i:4d} {label[:28]:28s} x{inv:3d} graph {ctx:7.2f}  " + "  ".join(
                f"{way} {per[n][way][i][4]:7.2f} {per[n][way][i][3]:+6.1f} %" for way in ways if i in per[n][way]))
    print()
