"""Session 50's table (docs/MEASUREMENTS.md; session 49's figures.py with this session's answers and
`kc run`'s wall time): each answer's plain sum, prediction and kc's
graph against the model (time / energy), kc's graph beside the model's kernel by kernel,
and capture.py's check of the model's graphs against its eager step, from reports
regenerated with the committed kc (`cargo build --release`) from the calls' results:

    python3 docs/results/2026-11-29-session50/figures.py /tmp/w50
"""
import json
import os
import subprocess
import sys

S = os.path.dirname(os.path.abspath(__file__))
W = sys.argv[1]
ANSWERS = [
    ("Mixtral decode graph", "call1-e-kc-zx", "e", "mixtral_decode_graph"),
    ("Mistral decode graph", "call1-e-kc-zx", "e", "mistral_decode_graph"),
    ("RegNetY-1.6GF step", "call1-e-kc-zx", "e", "regnety16_train"),
    ("ResNeXt-101 32x8d", "call2-f-kc-zx", "f", "resnext101"),
    ("BERT graph", "call2-f-kc-zx", "f", "bert_infer_graph"),
    ("EfficientNet-V2-M", "call2-f-kc-zx", "f", "effnet_v2_m"),
    ("Qwen3-MoE step graph", "call3-g-kc-zx", "g", "qwen3_moe_train_graph"),
    ("BLOOM step graph", "call3-g-kc-zx", "g", "bloom_train_graph"),
    ("LLaMA step", "call3-g-kc-zx", "g", "llama_train"),
    ("Qwen3-MoE step graph, kc-zy", "call4-h-kc-zy", "h", "qwen3_moe_train_graph"),
    ("BERT graph, kc-zy", "call4-h-kc-zy", "h", "bert_infer_graph"),
]


def report(call, part, name):
    d = f"{W}/{call}"
    if not os.path.isdir(d):
        os.makedirs(d)
        subprocess.run(["tar", "xJf", f"{S}/{call}.txz", "-C", d], check=True)
    d = f"{d}/{part}"
    out = f"{W}/r/{call}/{part}/{name}"
    plan = f"{d}/plans/{name}.kcplan"
    subprocess.run(["xz", "-dkf", plan + ".xz"], check=True)
    subprocess.run(["target/release/kc", "report", f"{d}/{name}.kc/{name}/plan.graph.json", "--isolated",
                    f"{d}/{name}.kc/{name}/plan.isolated.context.json", "--plan", plan,
                    "--reference", f"{d}/reference.json", "--reference-entry", name, "-o", out, "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    ref = json.load(open(f"{d}/reference.json"))["results"][name]
    return json.load(open(f"{out}/report.json")), ref


def check(c):
    if not c or not c.get("checked"):
        return "-"
    rms = f", rms {c['relative_rms']:.2g}" if c.get("relative_rms") is not None else ""
    return f"{'matches' if c['matches'] else 'OFF'} ({c['relative']:.2g}{rms})"


def wall(call, part, name):
    for line in open(f"{W}/{call}/{part}/summary.txt"):
        if line.startswith(f"{name} rc="):
            return f"{int(line.split()[2]) / 1000:.1f} s"
    return "-"


print("| model | `kc run` | plain sum | prediction | kc's graph | kernel by kernel (per iteration) | traced graph / model's graph against eager |")
print("|---|---|---|---|---|---|---|")
for label, call, part, name in ANSWERS:
    r, ref = report(call, part, name)
    rows = {x["what"]: x for x in r["model"]["rows"]}
    g = rows["kc graph replay"]
    p = r["prediction"]
    s = r.get("graphs_side_by_side")
    side = "-"
    if s:
        side = (f"{s['matched']:.0f} matched {s['matched_kc_us'] - s['matched_model_us']:+.1f} us; "
                f"model only {s['model_only_kernels']:.0f} ({s['model_only_us']:.1f} us), kc only "
                f"{s['kc_only_kernels']:.0f} ({s['kc_only_us']:.1f} us)")
    print(f"| {label} | {wall(call, part, name)} | {p['plain_error_pct']:+.1f} / {p['plain_energy_error_pct']:+.1f} % | "
          f"{p['error_pct']:+.1f} / {p['energy_error_pct']:+.1f} % | "
          f"{g['time_vs_model_pct']:+.1f} / {g['energy_vs_model_pct']:+.1f} % | {side} | "
          f"{check(ref.get('replay_against_eager'))} / {check(ref.get('cuda_graph', {}).get('replay_against_eager'))} |")
