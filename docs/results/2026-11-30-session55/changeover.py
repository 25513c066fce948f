"""Session 55 (issue 27, deliverable 6), without a GPU: kc run's time and where a unit's
changeover goes, from calls 2-5's isolated passes (`*.kc` kc's defaults of each binary,
`*.full` with --energy-full-queue). Per run: kc run's seconds (summary.txt), the units
alone's and the units after their lead-ins' phases, how many ticks of the energy counter
passed from one unit's last window to the next unit's first, and, where the results hold
them (kc-zz23 on), each unit's medians of what its measurement spent around its windows
(setup_ms: enqueue_timed, to_series, queued, drain, after, record), ms.

    python3 docs/results/2026-11-30-session55/changeover.py > docs/results/2026-11-30-session55/changeover.txt
"""
import collections
import json
import os
import statistics as st
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
calls = [("call2-b-kc-zz22", "b", "bounded tail (kc-zz22), against the full queue"),
         ("call3-c-kc-zz23", "c", "the same, full queue first (kc-zz23, its tail in the results)"),
         ("call4-d-kc-zz24", "d", "the enqueue of the timed launches timed (kc-zz24)"),
         ("call5-e-kc-zz25", "e", "the timed launches enqueued inside the series (kc-zz25)")]
fields = ["enqueue_timed", "to_series", "queued", "drain", "after", "record"]
with tempfile.TemporaryDirectory() as w:
    for call, part, what in calls:
        tarfile.open(f"{here}/{call}.txz").extractall(w, filter="data")
        runs = {}
        for line in open(f"{w}/{part}/summary.txt"):
            name, way, rc, ms, _ = line.split()
            runs[(name, way)] = int(ms) / 1000
        print(f"## {call}: {what}")
        for (name, way), s in runs.items():
            d = json.load(open(f"{w}/{part}/{name}.{way}/{name}/plan.isolated.context.json"))
            phases = {p["phase"]: p["seconds"] for p in d["isolated"]["phases"]}
            W, prev, gaps = d["windows"], None, collections.Counter()
            for u in d["units"]:
                ws = [W[i] for i in (u.get("energy") or {}).get("windows", [])]
                if prev is not None and ws:
                    gaps[round((ws[0]["start_unix_ms"] - prev) / 100)] += 1
                if ws:
                    prev = ws[-1]["end_unix_ms"]
            setup = [u["setup_ms"] for u in d["units"] if u.get("setup_ms")]
            med = {f: st.median(x[f] for x in setup if x.get(f) is not None)
                   for f in fields if any(x.get(f) is not None for x in setup)}
            print(f"{name:20s} {way:4s} kc run {s:5.1f} s; units alone {phases['the units alone']:4.1f} s, "
                  f"after their lead-ins {phases['the units after their lead-ins']:4.1f} s; ticks between units "
                  + ", ".join(f"{k}: {v}" for k, v in sorted(gaps.items()))
                  + ("; medians " + ", ".join(f"{f} {v:.1f}" for f, v in med.items()) if med else ""))
        print()
