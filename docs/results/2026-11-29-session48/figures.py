"""Session 48's table (docs/MEASUREMENTS.md): each answer's plain sum, prediction and kc's
graph against the model (time / energy), and kc's graph beside the model's kernel by
kernel, from reports regenerated with the committed kc.

    W=/tmp/w48 bash docs/results/2026-11-29-session48/chart.sh
    python3 docs/results/2026-11-29-session48/figures.py /tmp/w48
"""
import json
import os
import sys

W = sys.argv[1]
ANSWERS = [
    ("EfficientNet-B0 step, kc-zr (before a79957b)", None, "a", "effnet_b0_train"),
    ("EfficientNet-B0 step, kc-zs", "call2-c-kc-zs", "c", "effnet_b0_train"),
    ("MobileNetV3-L step, kc-zs", "call2-c-kc-zs", "c", "mobilenet_v3_train"),
    ("LLaMA step, kc-zr", "call1-a-kc-zr", "a", "llama_train"),
    ("Qwen2 step, kc-zr", "call1-a-kc-zr", "a", "qwen2_train"),
    ("LLaMA decode graph, kc-zt", "call3-b-kc-zt", "b", "llama_decode_graph"),
    ("Mixtral decode graph, kc-zt", "call3-b-kc-zt", "b", "mixtral_decode_graph"),
    ("EfficientNet-V2-S step (new), kc-zt", "call3-b-kc-zt", "b", "effnet_v2_s_train"),
]


def report(call, part, name):
    """The chart's regenerated report, or (call 1's EfficientNet-B0, not on the chart) one
    regenerated here with its plan, reference and the model's graph replays."""
    if call:
        return json.load(open(f"{W}/r/{call}/{part}/{name}/report.json"))
    d = f"{W}/call1-a-kc-zr/a"
    out = f"{W}/r/call1-a-kc-zr/a/{name}"
    os.system(f"xz -dkf {d}/plans/{name}.kcplan.xz")
    os.system(f"target/release/kc report {d}/{name}.kc/{name}/plan.graph.json --isolated "
              f"{d}/{name}.kc/{name}/plan.isolated.context.json --plan {d}/plans/{name}.kcplan "
              f"--reference {d}/reference.json --reference-entry {name} -o {out} --json > /dev/null")
    return json.load(open(f"{out}/report.json"))


print("| model | plain sum | prediction | kc's graph | kernel by kernel (per iteration) |")
print("|---|---|---|---|---|")
for label, call, part, name in ANSWERS:
    r = report(call, part, name)
    rows = {x["what"]: x for x in r["model"]["rows"]}
    g = rows["kc graph replay"]
    p = r["prediction"]
    s = r.get("graphs_side_by_side")
    side = "-"
    if s:
        side = (f"{s['matched']:.0f} matched {s['matched_kc_us'] - s['matched_model_us']:+.1f} us; "
                f"model only {s['model_only_kernels']:.0f} ({s['model_only_us']:.1f} us), kc only "
                f"{s['kc_only_kernels']:.0f} ({s['kc_only_us']:.1f} us); model's copies {s['model_copies']} "
                f"({s['model_copy_us']:.1f} us)")
    print(f"| {label} | {p['plain_error_pct']:+.1f} / {p['plain_energy_error_pct']:+.1f} % | "
          f"{p['error_pct']:+.1f} / {p['energy_error_pct']:+.1f} % | "
          f"{g['time_vs_model_pct']:+.1f} / {g['energy_vs_model_pct']:+.1f} % | {side} |")
