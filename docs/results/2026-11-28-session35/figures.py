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
    print(f"| {label} | {units} | {len(l['energy_units']) if 'energy_units' in l else l['units'] - l['capped']} of {l['units']} ({l['share_of_plain_pct']:.0f} %) | {run_ms/1000:.1f} s | {lead:.1f} s ({lead / l['units']:.2f} s a unit) | "
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

# The share: the term over the units within the first 0.5 … 0.9 of the units' energy alone
# (the largest first, as kc chooses them), from the same results (the units measured at 0.9
# hold those of every smaller share); the round's kernels on them taken out by their share
# of that term's time. The prediction's energy error, and the units in the term.
shares = [0.5, 0.6, 0.7, 0.8, 0.9]
print("\nthe prediction's energy with the term over the units within each share (units in it)")
print("  " + "model".ljust(22) + " ".join(f"{s:>13}" for s in shares + ["none"]))
for _, cp, n in rows:
    iso = json.load(open(f"{w}/{cp}/{n}.kc/{n}/plan.isolated.context.json"))
    p = json.load(open(f"{w}/r/{cp}/{n}/report.json"))["prediction"]
    term = [t for t in p["terms"] if t["what"].startswith("the units' producers")][0]
    kern = [t for t in p["terms"] if t["what"].startswith("kernels slower when")]
    kus, kj = (kern[0]["us"], kern[0]["energy_j"]) if kern else (0.0, 0.0)
    rk = {r["unit"]: r["round_us"] - r["alone_us"]
          for r in (iso["isolated"].get("transitions") or {}).get("round_unit_kernels", [])}
    units = sorted((u for u in iso["units"] if u.get("predicted_energy_j")),
                   key=lambda u: (-u["predicted_energy_j"], u["id"]))
    whole = sum(u["predicted_energy_j"] for u in units)
    base, tgt = p["predicted_energy_j"] - term["energy_j"], p["target_energy_j"]
    out = []
    for s in shares:
        held, sel = 0.0, []
        for u in units:
            if held >= s * whole:
                break
            held += u["predicted_energy_j"]
            sel.append(u)
        d = k = 0.0
        m = 0
        for u in sel:
            a = u.get("after_lead_in")
            if not a or a.get("capped_windows") or a.get("energy_j") is None or not u.get("energy"):
                continue
            m += 1
            d += (a["energy_j"] - u["energy"]["per_item_j"]["mean"]) * u["invocations"]
            k += rk.get(u["id"], 0.0) * u["invocations"]
        t = d - (kj * k / kus if kus else 0.0)
        out.append(f"{100 * ((base + t) / tgt - 1):+6.2f}% ({m:3d})")
    out.append(f"{100 * (base / tgt - 1):+6.2f}%")
    print("  " + n.ljust(22) + " ".join(f"{x:>13}" for x in out))
