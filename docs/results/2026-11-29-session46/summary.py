"""Session 46's figures from its four calls' tarballs: for each training step graph and
each isolated pass on its plan (the default, and the diagnostics: every bound read on its
stand-in, lead-ins kept or dropped), the fused optimizer's kernels per invocation in the
round (CUPTI, as recorded) and alone, and the time-only prediction from parts that
`kc report` gives over that pass against the model measured in the same call. Run from the
repository root after `cargo build --release`:

    python3 docs/results/2026-11-29-session46/summary.py /tmp/w46 > docs/results/2026-11-29-session46/summary.txt"""
import json
import re
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
kc = here.parents[2] / "target" / "release" / "kc"
work = Path(sys.argv[1])
passes = {  # call: [(model, label, isolated results relative to the call's folder)]
    "call1-a-kc-zp": [("bloom_train_graph", "bound reads as alone", "bloom_train_graph.bound.json"),
                      ("qwen3_moe_train_graph", "bound reads as alone", "qwen3_moe_train_graph.bound.json")]
    + [("bloom_train_graph", f"bisection run {i}", f"bisect_bloom/lead.{i}.json") for i in range(1, 12)],
    "call2-b-kc-zp": [(m, "bound reads as alone", f"{m}.bound.json") for m in (
        "mixtral_train_graph", "gpt2_train_graph", "llama_train_graph", "bert_train_graph",
        "mistral_train_graph", "swin_t_train")],
    "call3-c-kc-zp": [("bloom_train_graph", "only lead-in 138, bound reads as alone", "bloom.only138bound.json"),
                      ("bloom_train_graph", "no lead-in, bound reads as alone", "bloom.nonebound.json"),
                      ("bloom_train_graph", "default again", "bloom.default.json")]
    + [("llama_train_graph", f"bisection run {i}", f"bisect_llama/lead.{i}.json") for i in range(1, 12)],
    "call4-d-kc-zp": [(m, "lead-ins but the one before a memory-allocating unit", f"{m}.skip.json")
                      for m in ("mixtral_train_graph", "qwen3_moe_train_graph")],
}


def optimizer(results):
    d = json.loads(results.read_text())
    label = {u["id"]: u["label"] for u in d["units"]}
    k = next(k for k in d["isolated"]["transitions"]["round_unit_kernels"]
             if "_fused_adam" in label[k["unit"]])
    v = k.get("values") or {}
    kept = next((n for n in d["notes"] if "--round-lead-ins-only" in n), None)
    kept = re.search(r"kept (\d+) lead-ins", kept).group(1) if kept else "all"
    return v.get("round_as_recorded_us", k["round_us"]), k["alone_us"], bool(v.get("set")), kept


def prediction(call, model, results, tag):
    out = work / "reports" / call / f"{model}.{tag}"
    d = work / call / call.split("-")[1] / f"{model}.kc" / model
    subprocess.run([kc, "report", d / "plan.graph.json", "--isolated", results,
                    "--reference", d.parents[1] / "reference.json", "--reference-entry", model,
                    "-o", out], check=True, capture_output=True)
    t = json.loads((out / "report.json").read_text())["time"]
    md = (out / "report.md").read_text()
    m = re.search(r"\*\*prediction from parts\*\* \| \*\*([\d.]+) ± ([\d.]+) us\*\*.*?\*\*([+-][\d.]+) %", md)
    return m.group(1), m.group(2), m.group(3)


print("model                   | pass                                              | lead-ins | optimizer in the round (as recorded) | alone | set alone | prediction (time only)")
for call, rows in passes.items():
    folder = work / call
    if not folder.exists():
        folder.mkdir(parents=True)
        subprocess.run(["tar", "xJf", here / f"{call}.txz", "-C", folder], check=True)
    part = folder / call.split("-")[1]
    models = sorted({m for m, _, _ in rows})
    for m in models:
        rows_m = [(m, "default (kc run, time only)", f"{m}.kc/{m}/plan.isolated.context.json")] + [r for r in rows if r[0] == m]
        for i, (model, what, rel) in enumerate(rows_m):
            res = part / rel
            if not res.exists():
                continue
            r, a, s, kept = optimizer(res)
            p, u, e = prediction(call, model, res, i)
            print(f"{call[:5]} {model:21s} | {what:49s} | {kept:>8s} | {r:9.1f} us | {a:9.1f} us | {'yes' if s else 'no':3s} | {p} ± {u} us, {e} %")
