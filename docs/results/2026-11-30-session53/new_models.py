"""Session 53, calls 2 and 4 (kc-zz12, run.sh parts b and c): the five models answered by
`kc run` with kc's default record in the model's cache state (the code evicted where the
model's is far). Per model, from its report regenerated with the kc binary given: the
units' median |error| in the model's cache state against kc's graph (issue 27, deliverable
3), the same over the units whose operands the memory image holds all, the share of the
recorded invocations whose code was evicted, the prediction from parts and the plain sum
against the model's CUDA graph (time / energy), kc's graph against it, and kc run's time.

    cargo build --release
    python3 docs/results/2026-11-30-session53/new_models.py target/release/kc > docs/results/2026-11-30-session53/new_models.txt
"""
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
kc = os.path.abspath(sys.argv[1])
calls = {"call2-b-kc-zz12": ("b", ["qwen2_decode_graph", "vit_b_16_tf32"]),
         "call4-c-kc-zz12": ("c", ["gpt2_decode_graph", "qwen3_moe_decode_graph", "convnext_tiny_train"])}
with tempfile.TemporaryDirectory() as w:
    for call, (part, names) in calls.items():
        tarfile.open(f"{here}/{call}.txz").extractall(w, filter="data")
        times = dict(re.findall(r"^(\S+) rc=0 (\d+) ms$", open(f"{w}/{part}/summary.txt").read(), re.M))
        for n in names:
            d = f"{w}/{part}/{n}.kc/{n}"
            out = f"{w}/rep/{n}"
            subprocess.run([kc, "report", f"{d}/plan.graph.json", "--isolated", f"{d}/plan.isolated.context.json",
                            "--reference", f"{w}/{part}/reference.json", "--reference-entry", n, "-o", out],
                           check=True, capture_output=True)
            r = json.load(open(f"{out}/report.json"))
            t = r["time"]
            p = r["prediction"]
            print(f"{n:24s} ({call}) per unit in the model's cache state {t['unit_in_model_cache_vs_in_context_median_abs_pct']:4.1f} % "
                  f"over {t['units_in_model_cache_vs_in_context']} units (image holds all: "
                  f"{t['unit_in_model_cache_image_held_median_abs_pct']:4.1f} % over {t['units_in_model_cache_image_held']}), "
                  f"alone {t['unit_isolated_vs_in_context_median_abs_pct']:4.1f} %; code evicted before "
                  f"{t['in_model_cache_code_evicted_pct']:3.0f} % of the invocations; kc run {int(times[n]) / 1000:.1f} s")
            print(" " * 26 + f"prediction {p['error_pct']:+5.1f} / {p['energy_error_pct']:+5.1f} %, "
                  f"plain sum {p['plain_error_pct']:+5.1f} / {p['plain_energy_error_pct']:+5.1f} %")
