"""Session 51 (deliverable 3 of issue 27): each unit alone, and alone in the model's cache
state, against its kernels in kc's graph, from the four calls that measured both on the
same kept plans (time only, `run.sh t`). The calls differ in how L2 was turned over before
each invocation:

  call 3 (kc-zz1)  a scratch twice L2 written (left dirty)
  call 4 (kc-zz2)  a scratch twice L2 read (left clean)
  call 5 (kc-zz3)  a scratch twice L2 written, then discarded from L2 (left empty)
  call 6 (kc-zz4)  read, then as many bytes written as the model's steps before the
                   invocation wrote among the last L2 of bytes they touched (kc's way since)

Each call's results are reported again here (`kc report`, no plan needed) with the kc
binary given, and per model it prints: the units' median |error| alone and in the model's
cache state (signed medians in brackets), how many within 3 %, the sums over units
(kernels x invocations) against kc's graph, and the share of the bytes read that the model
left to come from memory.

    cargo build --release
    python3 docs/results/2026-11-29-session51/cache_state.py target/release/kc > docs/results/2026-11-29-session51/cache_state.txt
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
kc = os.path.abspath(sys.argv[1])
ways = {
    "call3-t-kc-zz1": "written",
    "call4-t-kc-zz2": "read",
    "call5-t-kc-zz3": "written, discarded",
    "call6-t-kc-zz4": "read, then the model's dirty share written",
}
for call, way in ways.items():
    with tempfile.TemporaryDirectory() as w:
        tarfile.open(f"{here}/{call}.txz").extractall(w, filter="data")
        print(f"## {call}: L2 turned over by a scratch {way}")
        within, medians = [], []
        for iso in sorted(glob.glob(f"{w}/t/*.iso.json")):
            n = os.path.basename(iso)[: -len(".iso.json")]
            out = f"{w}/rep/{n}"
            subprocess.run([kc, "report", f"{w}/t/{n}.graph.json", "--isolated", iso, "-o", out],
                           check=True, capture_output=True)
            r = json.load(open(f"{out}/report.json"))
            t = r["time"]
            cache = {u["id"]: (u.get("launches_verified") or {}).get("in_model_cache")
                     for u in json.load(open(iso))["units"]}
            us = [u for u in r["units"] if u.get("in_model_cache_vs_in_context_pct") is not None
                  and u.get("isolated_vs_in_context_pct") is not None]
            a = [u["isolated_vs_in_context_pct"] for u in us]
            c = [u["in_model_cache_vs_in_context_pct"] for u in us]
            alone = sum(u["alone_kernels_us"] * u["invocations"] for u in us)
            ctx = sum(u["in_context_mean_us"] * u["invocations"] for u in us)
            cached = sum(cache[u["id"]]["kernels_us"] * u["invocations"] for u in us)
            ok = sum(abs(x) <= 3 for x in c)
            within.append(st.median(map(abs, c)) <= 3)
            medians.append(st.median(map(abs, c)))
            print(f"{n:28s} {len(us):3d} units; alone {st.median(map(abs, a)):4.1f} % ({st.median(a):+5.1f}), "
                  f"in the model's cache state {st.median(map(abs, c)):4.1f} % ({st.median(c):+5.1f}), "
                  f"{ok} within 3 %; in sum alone {100 * (alone / ctx - 1):+5.1f} %, "
                  f"in the model's cache state {100 * (cached / ctx - 1):+5.1f} %; "
                  f"{t.get('in_model_cache_cold_bytes_pct') or 0:3.0f} % of the bytes read from memory")
        print(f"median |error| within 3 % on {sum(within)} of {len(within)} models "
              f"({min(medians):.1f}-{max(medians):.1f} %)\n")
