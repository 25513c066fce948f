"""Session 54, call 1 (issue 27, deliverable 3; session 53's run.sh part f, run here as part
a): do the decode graphs' mask units run as in kc's graph when the model's steps leading up
to them run just before them? Each unit alone in the model's cache state (its record,
`in_model_cache`), and its own kernels after its lead-ins (`after_lead_in.kernels.unit_us`,
--lead-in-share 1 --lead-in-kernels), both against its kernels in kc's graph of the same
call (`kc report`, no plan needed, with the kc binary given). Per model: both ways' median
|error| (signed median, units) and the sum over units; then per unit of each decode graph.

    cargo build --release
    python3 docs/results/2026-11-30-session54/lead.py target/release/kc > docs/results/2026-11-30-session54/lead.txt
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
call, part = (sys.argv[2:4] + ["call1-a-kc-zz15", "a"][len(sys.argv[2:4]):])[:2]


def med(x):
    return f"{st.median(map(abs, x)):4.1f} % ({st.median(x):+5.1f}, {len(x):3d})" if x else "        -         "


with tempfile.TemporaryDirectory() as w:
    tarfile.open(f"{here}/{call}.txz").extractall(w, filter="data")
    print(f"# {call}: each unit's record in the model's cache state (`record`) and its own kernels after its lead-ins (`led`), against kc's graph")
    for g in sorted(glob.glob(f"{w}/{part}/*.graph.json")):
        n = os.path.basename(g)[: -len(".graph.json")]
        iso = f"{w}/{part}/{n}.iso.lead.json"
        out = f"{w}/rep/{n}"
        subprocess.run([kc, "report", g, "--isolated", iso, "-o", out], check=True, capture_output=True)
        r = {u["id"]: u for u in json.load(open(f"{out}/report.json"))["units"]}
        rows = []
        for u in json.load(open(iso))["units"]:
            rep = r.get(u["id"])
            lv = u.get("launches_verified") or {}
            rec = (lv.get("in_model_cache") or {}).get("kernels_us")
            led = ((u.get("after_lead_in") or {}).get("kernels") or {}).get("unit_us")
            ctx = rep and rep.get("in_context_mean_us")
            if not ctx or rec is None:
                continue
            pct = lambda x: None if x is None else 100 * (x / ctx - 1)
            rows.append((u["id"], u["label"], u["invocations"], ctx, rec, pct(rec), led, pct(led),
                         (u.get("after_lead_in") or {}).get("lead_in_steps")))
        both = [x for x in rows if x[6] is not None]
        ctx_sum = sum(x[3] * x[2] for x in both)
        print(f"\n## {n}: {len(rows)} units recorded, {len(both)} also after their lead-ins")
        print(f"record {med([x[5] for x in both])}, in sum {100 * (sum(x[4] * x[2] for x in both) / ctx_sum - 1):+5.1f} %")
        print(f"led    {med([x[7] for x in both])}, in sum {100 * (sum(x[6] * x[2] for x in both) / ctx_sum - 1):+5.1f} %")
        print("  id label                          inv  graph us   record           led")
        for i, label, inv, ctx, rec, e_rec, led, e_led, steps in rows:
            led_s = f"{led:7.2f} {e_led:+6.1f} %" if led is not None else "      -"
            print(f"{i:4d} {label[:30]:30s} x{inv:3d} {ctx:8.2f}  {rec:7.2f} {e_rec:+6.1f} %  {led_s}")
