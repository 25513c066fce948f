"""Session 53: which rule for evicting a unit's code before an invocation in the record in
the model's cache state, chosen from call 1 (kc-zz11: every unit recorded with its code
kept, `kc`, and evicted before every invocation, `code`) before call 2 measured the rule
taken. Per unit, the rule picks the `code` record or the `kc` one by where the model last
ran its code (examples/code_distance.rs on session 51's kept plans: the median bytes
between, and the share of its steps with more than L2 between); per model, the units'
median |error| against kc's graph (signed median) and the sum over units against it.
`far` (the code evicted where the model ran more than L2 of bytes since, on at least half
a unit's steps) is the physical rule; kc records it step by step since (call 2).

    cargo build --release --example code_distance && cargo build --release
    python3 docs/results/2026-11-30-session53/rules.py > docs/results/2026-11-30-session53/rules.txt
"""
import glob
import json
import lzma
import os
import statistics as st
import subprocess
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(f"{here}/../../..")
kc = f"{root}/target/release/kc"
with tempfile.TemporaryDirectory() as w:
    cd = {}
    for p in sorted(glob.glob(f"{here}/../2026-11-29-session51/plans/*.kcplan.xz")):
        n = os.path.basename(p)[: -len(".kcplan.xz")]
        open(f"{w}/{n}.kcplan", "wb").write(lzma.open(p).read())
        out = subprocess.run([f"{root}/target/release/examples/code_distance", f"{w}/{n}.kcplan"],
                             check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            d = json.loads(line)
            cd[(n, d["unit"])] = d
    tarfile.open(f"{here}/call1-a-kc-zz11.txz").extractall(w, filter="data")
    per = {}
    for g in sorted(glob.glob(f"{w}/a/*.graph.json")):
        n = os.path.basename(g)[: -len(".graph.json")]
        for way in ("kc", "code"):
            out = f"{w}/rep/{n}.{way}"
            subprocess.run([kc, "report", g, "--isolated", f"{w}/a/{n}.iso.{way}.json", "-o", out],
                           check=True, capture_output=True)
            r = json.load(open(f"{out}/report.json"))
            per.setdefault(n, {})[way] = {u["id"]: (u["in_model_cache_vs_in_context_pct"], u["in_context_mean_us"],
                                                    u["invocations"])
                                          for u in r["units"] if u.get("in_model_cache_vs_in_context_pct") is not None}
rules = {"kept (kc)": lambda d: False, "evicted (code)": lambda d: True,
         "far, half the steps": lambda d: d["far_share"] >= 0.5, "far, any step": lambda d: d["far_share"] > 0}
print(f"{'rule':20s}" + "".join(f"{n[:14]:>20s}" for n in per) + "  models within 3 %")
for name, rule in rules.items():
    row, within = "", 0
    for n, by in per.items():
        e, ctx, rec = [], 0.0, 0.0
        for i, (ek, c, inv) in by["kc"].items():
            if i not in by["code"]:
                continue
            x = by["code"][i][0] if rule(cd[(n, i)]) else ek
            e.append(x)
            ctx += c * inv
            rec += c * (1 + x / 100) * inv
        m = st.median(map(abs, e))
        within += m <= 3
        row += f"  {m:4.1f} ({st.median(e):+4.1f}) {100 * (rec / ctx - 1):+5.1f}"
    print(f"{name:20s}{row}  {within}")
print("(per model: median |error| %, signed median in brackets, the sum over units against kc's graph %)")
