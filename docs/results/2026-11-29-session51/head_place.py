"""Session 51: the round's kernels' term with the round's step taken away from the head of
the unit's launch alone, on the three answers whose kept plans call 2 recorded again with
`kc exec --by-step-rotated` (each unit by step from a launch starting at its second step,
the first step then at the launch's end): T5's graph (session 49, call 4), ResNeXt-101
32x8d (session 50, call 2) and RegNetY-1.6GF's step (session 50, call 1). From each
answer's own results, summed over the units the round told apart (kernels × invocations):
the units alone; the units as the prediction takes them (alone plus the round's kernels
beyond alone at the round's step); and the same with alone at that step taken from the
rotated record (its first place elsewhere, call 2), each against kc's graph in the
answer's own call. Prints also `rotated.py`'s figures for call 2.

    cargo build --release
    python3 docs/results/2026-11-29-session51/head_place.py target/release/kc > docs/results/2026-11-29-session51/head_place.txt
"""
import json
import os
import subprocess
import sys
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
kc = os.path.abspath(sys.argv[1])
answers = [
    ("t5_graph_zw", "2026-11-29-session49", "call4-d-kc-zw", "d", "t5_graph", "kernels"),
    ("resnext101_zx", "2026-11-29-session50", "call2-f-kc-zx", "f", "resnext101", "kernels"),
    ("regnety16_train_zx", "2026-11-29-session50", "call1-e-kc-zx", "e", "regnety16_train", "kernels"),
]
with tempfile.TemporaryDirectory() as w:
    tarfile.open(f"{here}/call2-s-kc-zz.txz").extractall(f"{w}/c2", filter="data")
    print(subprocess.run([sys.executable, f"{here}/../2026-11-29-session50/rotated.py"]
                         + [f"{w}/c2/s/{a[0]}.rotated.json" for a in answers],
                         capture_output=True, text=True, check=True).stdout.replace(w + "/", ""))
    for rot_name, session, call, part, name, _ in answers:
        tarfile.open(f"{here}/../{session}/{call}.txz").extractall(f"{w}/{call}", filter="data")
        d = f"{w}/{call}/{part}/{name}.kc/{name}"
        subprocess.run([kc, "report", f"{d}/plan.graph.json", "--isolated",
                        f"{d}/plan.isolated.context.json", "-o", f"{w}/r/{name}"],
                       check=True, capture_output=True)
        rep = {u["id"]: u for u in json.load(open(f"{w}/r/{name}/report.json"))["units"]}
        iso = json.load(open(f"{d}/plan.isolated.context.json"))
        rk = {r["unit"]: r for r in iso["isolated"]["transitions"]["round_unit_kernels"]}
        rot = {u["id"]: u for u in json.load(open(f"{w}/c2/s/{rot_name}.rotated.json"))["units"]}
        ctx = alone = took = away = 0.0
        for u in iso["units"]:
            r, row = rk.get(u["id"]), rep.get(u["id"])
            if not r or not row or row.get("in_context_mean_us") is None:
                continue
            n = u["invocations"]
            whole = u["launches_verified"]["kernels_us"]
            ctx += row["in_context_mean_us"] * n
            alone += whole * n
            took += (whole + r["round_us"] - r["alone_us"]) * n
            lv = (rot.get(u["id"]) or {}).get("launches_verified") or {}
            by, rs = lv.get("by_step") or [], lv.get("by_step_rotated") or []
            step0 = {s["step"]: s for s in rs}.get(by[0]["step"]) if by and rs else None
            away += (whole + r["round_us"] - (step0["kernels_us"] if step0 else r["alone_us"])) * n
        print(f"{name:18s} ({session[11:]}, {call}): against kc's graph, the units alone {100 * (alone / ctx - 1):+5.2f} %, "
              f"as the prediction takes them {100 * (took / ctx - 1):+5.2f} %, "
              f"the round's step away from the head {100 * (away / ctx - 1):+5.2f} %")
