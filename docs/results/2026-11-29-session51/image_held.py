"""Session 51: each unit in the model's cache state against kc's graph (call 6, the way kc
keeps), over every unit and over the units whose operands the memory image holds all. Call
6's results predate the field that says which (`outside_image_operands`), so the plans it
ran (plans/, the kept plans of `run.sh t`) are asked with `kc::plan::cache_state::
operands_outside_image` (`examples/outside_image.rs`) over every step of each unit.

    cargo build --release --example outside_image
    python3 docs/results/2026-11-29-session51/image_held.py target/release/kc target/release/examples/outside_image
"""
import json
import lzma
import os
import statistics as st
import subprocess
import sys
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
kc, outside_image = (os.path.abspath(a) for a in sys.argv[1:3])
held_within = all_within = 0
with tempfile.TemporaryDirectory() as w:
    tarfile.open(f"{here}/call6-t-kc-zz4.txz").extractall(w, filter="data")
    names = sorted(os.path.basename(p)[: -len(".iso.json")] for p in os.listdir(f"{w}/t") if p.endswith(".iso.json"))
    for n in names:
        plan = f"{w}/{n}.kcplan"
        with open(plan, "wb") as f:
            f.write(lzma.open(f"{here}/plans/{n}.kcplan.xz").read())
        outside = {}
        for line in subprocess.run([outside_image, plan], capture_output=True, text=True, check=True).stdout.splitlines():
            d = json.loads(line)
            outside[d["unit"]] = d["outside"]
        subprocess.run([kc, "report", f"{w}/t/{n}.graph.json", "--isolated", f"{w}/t/{n}.iso.json", "-o", f"{w}/r/{n}"],
                       check=True, capture_output=True)
        units = [u for u in json.load(open(f"{w}/r/{n}/report.json"))["units"]
                 if u.get("in_model_cache_vs_in_context_pct") is not None]
        every = [abs(u["in_model_cache_vs_in_context_pct"]) for u in units]
        held = [abs(u["in_model_cache_vs_in_context_pct"]) for u in units if outside.get(u["id"]) == 0]
        out = [u["in_model_cache_vs_in_context_pct"] for u in units if outside.get(u["id"], 1) > 0]
        all_within += st.median(every) <= 3
        held_within += st.median(held) <= 3
        print(f"{n:28s} every unit {st.median(every):4.1f} % ({len(every)}); whose operands the image holds all "
              f"{st.median(held):4.1f} % ({len(held)}); the others' signed median {st.median(out) if out else 0:+5.1f} % ({len(out)})")
print(f"within 3 %: {all_within} of {len(names)} over every unit, {held_within} of {len(names)} over the units the image holds")
