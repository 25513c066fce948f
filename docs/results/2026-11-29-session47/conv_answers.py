"""Session 47's five training steps whose convolution_backward units kc-zr regroups (the
bias gradient's nested aten::sum given to the op's unit), each against its earlier chart
answer: the plain sum, kc's prediction from parts and kc's graph, each against the model's
own CUDA graph measured in the same call, time / energy; and how many units launched other
kernels alone than the trace holds. Reads the reports `run.sh` wrote and the results.

    python3 docs/results/2026-11-29-session47/conv_answers.py NEW OLD > conv_answers.txt

NEW: the folder calls 2, 3 and 4 are unpacked into (c2/b, c3/c, c4/d); OLD: session 45's chart
folder (`W=OLD bash docs/results/2026-11-29-session45/chart.sh`)."""
import json
import re
import sys
from pathlib import Path

new, old = Path(sys.argv[1]), Path(sys.argv[2])
models = {  # name: (new results folder, old chart report folder)
    "convnext_tiny_train": ("c2/b", "r/call2-b-kc-w/b"),
    "mobilenet_v3_train": ("c2/b", "r/call4-j-kc-za/j"),
    "vit_b_16_train": ("c3/c", "r/call3-d-kc-x/d"),
    "swin_t_train": ("c3/c", "r/call2-c-kc-x/c"),
    "convnext_small_train": ("c4/d", "r/call1-k-kc-u/k"),
}


def errors(md):
    text = md.read_text()
    out = {}
    for key, pat in [("plain", r"^\| Σ isolated × count \(plain\) \|.*\| ([^|]*) \|$"),
                     ("prediction", r"^\| \*\*prediction from parts\*\* \|.*\| \*\*([^|*]*)\*\* \|$"),
                     ("kc graph", r"^\| kc graph replay \| [^|]* \| ([^|]*) \| [^|]* \| ([^|]*) \|$")]:
        m = re.search(pat, text, re.M)
        out[key] = " / ".join(g.strip() for g in m.groups()) if m else "-"
    return out


def odd_units(results):
    d = json.loads(results.read_text())
    n = 0
    for u in d["units"]:
        lv = u.get("launches_verified") or {}
        if lv and (lv.get("launched_per_invocation") != lv.get("traced_per_invocation")
                   or lv.get("names_matched", 1) < 1):
            n += 1
    return n, len(d["units"])


print("model | answer | units | units launching other kernels than traced | plain sum | prediction from parts | kc's graph (time / energy vs the model's graph)")
for m, (nf, of) in models.items():
    nd = new / nf / f"{m}.kc" / m
    e = errors(nd / "report" / "report.md")
    bad, n = odd_units(nd / "plan.isolated.context.json")
    print(f"{m} | session 47 (kc-zr) | {n} | {bad} | {e['plain']} | {e['prediction']} | {e['kc graph']}")
    e = errors(old / of / m / "report.md")
    oldres = next((old / of.removeprefix("r/")).glob(f"{m}.kc/{m}/plan.isolated.context.json"))
    bad, n = odd_units(oldres)
    print(f"{m} | chart ({of.split('/')[1]}) | {n} | {bad} | {e['plain']} | {e['prediction']} | {e['kc graph']}")
