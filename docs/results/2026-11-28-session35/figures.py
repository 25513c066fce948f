"""Session 35's figures: for the nine models answered with the units after their lead-ins
(chart.sh's "s35" rows), the plain sum, the prediction without the producers' term (its
energy taken back off) and with it, against the model's CUDA graph; the units measured,
their share of the energy, and the lead-ins' phase of `kc run`. Run after
`W=/tmp/s35c bash docs/results/2026-11-28-session35/chart.sh`:
    python3 docs/results/2026-11-28-session35/figures.py /tmp/s35c
"""
import json, sys, glob, os

w = sys.argv[1]
rows = [("ConvNeXt-S step", "call1-f-kc-s/f", "convnext_small_train"),
        ("T5 step", "call1-f-kc-s/f", "t5_train"),
        ("Wide ResNet-50-2 step", "call2-g-kc-s/g", "wide_resnet50_train"),
        ("Swin-B", "call2-g-kc-s/g", "swin_b"),
        ("BERT graph", "call2-g-kc-s/g", "bert_infer_graph"),
        ("ResNeXt-50 step", "call3-h-kc-s/h", "resnext50_train"),
        ("RegNetY-3.2GF TF32", "call3-h-kc-s/h", "regnety_tf32"),
        ("LLaMA step, eager", "call3-h-kc-s/h", "llama_train"),
        ("Qwen2 step graph", "call3-h-kc-s/h", "qwen2_train_graph")]
print("| model | units | measured (share of energy) | kc run | lead-ins | plain t / E | without the term E | **prediction t / E** | kc graph t / E |")
print("|---|---|---|---|---|---|---|---|---|")
moved = []
for label, cp, n in rows:
    r = json.load(open(f"{w}/r/{cp}/{n}/report.json"))
    p = r["prediction"]
    l = p["lead_in_units"]
    term = [t for t in p["terms"] if t["what"].startswith("the units' producers")][0]
    target = p["target_energy_j"]
    without = 100 * ((p["predicted_energy_j"] - term["energy_j"]) / target - 1)
    iso = json.load(open(f"{w}/{cp}/{n}.kc/{n}/plan.isolated.context.json"))
    ph = {x["phase"]: x["seconds"] for x in iso["isolated"]["phases"]}
    lead = [v for k, v in ph.items() if "lead-ins" in k][0]
    units = sum(1 for u in iso["units"] if u["status"] == "ok")
    summary = open(f"{w}/{cp}/summary.txt").read()
    run_ms = [int(x.split()[2]) for x in summary.splitlines() if x.startswith(n + " rc=")][0]
    g = r.get("model_comparison") or {}
    kcg = [x for x in open(f"{w}/r/{cp}/{n}/report.md").read().splitlines() if x.startswith("| kc graph replay |")][0]
    c = [x.strip() for x in kcg.split("|")]
    print(f"| {label} | {units} | {len(l['energy_units']) if 'energy_units' in l else l['units'] - l['capped']} of {l['units']} ({l['share_of_plain_pct']:.0f} %) | {run_ms/1000:.1f} s | {lead:.1f} s | "
          f"{p['plain_error_pct']:+.1f} / {p['plain_energy_error_pct']:+.1f} % | {without:+.1f} % | "
          f"**{p['error_pct']:+.1f} / {p['energy_error_pct']:+.1f} %** | {c[3]} / {c[5]} |")
    moved.append(abs(without) - abs(p["energy_error_pct"]))
print(f"\nenergy |error| moved toward the model on {sum(m > 0 for m in moved)} of {len(moved)}; "
      f"median change {sorted(moved)[len(moved)//2]:+.2f} points")

# Looked at, not adopted: the units held down by the power cap in their launches after
# their lead-ins, which the term leaves out (their energy alone, at a duty cycle, stands).
print("\nunits at the cap after their lead-ins (left out of the term): energy after their lead-ins"
      " against alone at a duty cycle, and what taking them would move the prediction's energy")
for cp, n in [(c, m) for _, c, m in rows]:
    iso = json.load(open(f"{w}/{cp}/{n}.kc/{n}/plan.isolated.context.json"))
    p = json.load(open(f"{w}/r/{cp}/{n}/report.json"))["prediction"]
    de = ae = dt = at = 0.0
    k = 0
    for u in iso["units"]:
        a = u.get("after_lead_in")
        e = ((u.get("energy") or {}).get("per_item_j") or {}).get("mean")
        if not a or not a.get("capped_windows") or a.get("energy_j") is None or e is None:
            continue
        m = u["invocations"]
        k += 1
        de += (a["energy_j"] - e) * m
        ae += e * m
        dt += (a["time_us"] - u["time_us"]["mean"]) * m
        at += u["time_us"]["mean"] * m
    if k:
        print(f"  {n}: {k} units, energy {100 * de / ae:+.1f} %, time {100 * dt / at:+.1f} %;"
              f" the prediction {p['energy_error_pct']:+.2f} -> {p['energy_error_pct'] + 100 * de / p['target_energy_j']:+.2f} %")

# kc's graph run's period: the series' slope over every tick (series_period_s) against the
# same series' ends (its windows' seen durations over their periods).
print("\nkc's graph run: the series' slope against its ends, ms")
for cp, n in [(c, m) for _, c, m in rows]:
    g = json.load(open(f"{w}/{cp}/{n}.kc/{n}/plan.graph.json"))
    ws = [x for x in g["windows"] if x.get("series_period_s")]
    sp = ws[0]["series_period_s"]
    periods = sum(round(x["duration_s"] / sp) for x in ws)
    ends = sum(x["seen_duration_s"] for x in ws) / periods
    print(f"  {n}: slope {sp * 1e3:.3f}, ends {ends * 1e3:.3f} over {periods} periods")
