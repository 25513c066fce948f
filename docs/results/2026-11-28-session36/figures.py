"""Session 36's figures, over chart.sh's "s36" rows: (1) each model's plain sum, its
prediction as kc now gives it, the same results' prediction with the units measured after
their lead-ins at a duty cycle left out (session 35's rule: their energy alone stands; the
results copied with those units marked held down by the cap, and `kc report` run on them),
without the producers' term, and kc's graph, against the model's CUDA graph; `kc run`'s time
and its lead-ins' phase. (2) The graph runs' series periods: the least-squares slope over
their ticks (sessions 34-35), their ends, and their lower envelope (from session 36). Run
after `cargo build --release` and `W=/tmp/s36c bash docs/results/2026-11-28-session36/chart.sh`:
    python3 docs/results/2026-11-28-session36/figures.py /tmp/s36c
"""
import json, os, subprocess, sys, statistics as st

w = sys.argv[1]
kc = os.environ.get("KC", "target/release/kc")
rows = [("ConvNeXt-S step", "call1-k-kc-u/k", "convnext_small_train"),
        ("Wide ResNet-50-2 step", "call1-k-kc-u/k", "wide_resnet50_train"),
        ("BERT graph", "call1-k-kc-u/k", "bert_infer_graph"),
        ("T5 graph", "call2-l-kc-u/l", "t5_graph"),
        ("EfficientNet-V2-S", "call3-m-kc-u/m", "effnet_v2_s"),
        ("ResNet-50", "call3-m-kc-u/m", "resnet50"),
        ("ViT-B/16 TF32", "call3-m-kc-u/m", "vit_b_16_tf32"),
        ("Mixtral decode graph", "call3-m-kc-u/m", "mixtral_decode_graph"),
        ("Qwen2 step, eager", "call4-n-kc-u/n", "qwen2_train")]


def report(cp, n, iso_path, out):
    d = f"{w}/{cp}/{n}.kc/{n}"
    subprocess.run([kc, "report", f"{d}/plan.graph.json", "--isolated", iso_path, "--reference",
                    f"{w}/{cp}/reference.json", "--reference-entry", n, "-o", out, "--json"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.load(open(f"{out}/report.json"))["prediction"]


print("| model | units (of them at a duty cycle) | kc run | lead-ins | plain t / E | without the term E | duty units left out E | **prediction t / E** | kc graph t / E |")
print("|---|---|---|---|---|---|---|---|---|")
ab = []
for label, cp, n in rows:
    d = f"{w}/{cp}/{n}.kc/{n}"
    iso = json.load(open(f"{d}/plan.isolated.context.json"))
    p = json.load(open(f"{w}/r/{cp}/{n}/report.json"))["prediction"]
    l = p.get("lead_in_units") or {}
    terms = [t for t in p["terms"] if t["what"].startswith("the units' producers")]
    target = p["target_energy_j"]
    without = 100 * ((p["predicted_energy_j"] - sum(t["energy_j"] for t in terms)) / target - 1)
    # Session 35's rule on the same results.
    for u in iso["units"]:
        a = u.get("after_lead_in")
        if a and a.get("duty_share"):
            a["capped_windows"] = max(1, a["capped_windows"])
            del a["duty_share"]
    os.makedirs(f"{w}/noduty/{n}", exist_ok=True)
    json.dump(iso, open(f"{w}/noduty/{n}/iso.json", "w"))
    q = report(cp, n, f"{w}/noduty/{n}/iso.json", f"{w}/noduty/{n}/r")
    ph = {x["phase"]: x["seconds"] for x in iso["isolated"]["phases"]}
    lead = sum(v for k, v in ph.items() if "lead-ins" in k)
    run_ms = [int(x.split()[2]) for x in open(f"{w}/{cp}/summary.txt").read().splitlines()
              if x.startswith(n + " rc=")][0]
    kcg = [x for x in open(f"{w}/r/{cp}/{n}/report.md").read().splitlines()
           if x.startswith("| kc graph replay |")][0]
    c = [x.strip() for x in kcg.split("|")]
    units = sum(1 for u in iso["units"] if u["status"] == "ok")
    if l.get("at_duty"):
        ab.append((label, q["energy_error_pct"], p["energy_error_pct"]))
    print(f"| {label} | {units} ({l.get('at_duty', 0)}) | {run_ms / 1000:.1f} s | {lead:.1f} s | "
          f"{p['plain_error_pct']:+.1f} / {p['plain_energy_error_pct']:+.1f} % | {without:+.1f} % | "
          f"{q['energy_error_pct']:+.2f} % | **{p['error_pct']:+.1f} / {p['energy_error_pct']:+.2f} %** | {c[3]} / {c[5]} |")
print()
toward = sum(abs(b) < abs(a) for _, a, b in ab)
print(f"Units at a duty cycle after their lead-ins, on {len(ab)} models: toward the model on {toward}; "
      f"within 3 %: {sum(abs(a) <= 3 for _, a, _ in ab)} left out, {sum(abs(b) <= 3 for *_, b in ab)} taken; "
      f"mean |error| {st.mean(abs(a) for _, a, _ in ab):.2f} % left out, {st.mean(abs(b) for *_, b in ab):.2f} % taken")
for label, a, b in ab:
    print(f"  {label}: {a:+.2f} -> {b:+.2f} %")


def lower_envelope(t):
    hull = []
    for i, y in enumerate(t):
        while len(hull) >= 2 and (hull[-1][1] - hull[-2][1]) * (i - hull[-2][0]) >= (y - hull[-2][1]) * (hull[-1][0] - hull[-2][0]):
            hull.pop()
        hull.append((i, y))
    m = (len(t) - 1) / 2
    s = lambda a, b: (b[1] - a[1]) / (b[0] - a[0])
    k = next(i for i, p in enumerate(hull) if p[0] >= m)
    if hull[k][0] > m or k == 0:
        return s(hull[max(k, 1) - 1], hull[max(k, 1)])
    return (s(hull[k - 1], hull[k]) + s(hull[k], hull[k + 1])) / 2 if k + 1 < len(hull) else s(hull[k - 1], hull[k])


print("\nkc's graph runs' series periods, ms: least-squares slope / ends / lower envelope")
rows.insert(3, ("Swin-T step", "call2-l-kc-u/l", "swin_t_train"))
for label, cp, n in rows:
    g = json.load(open(f"{w}/{cp}/{n}.kc/{n}/plan.graph.json"))
    t = next(x["series_ticks_ms"] for x in g["windows"] if x.get("series_ticks_ms"))
    k = len(t)
    mi = (k - 1) / 2
    my = st.mean(t)
    slope = sum((i - mi) * (y - my) for i, y in enumerate(t)) / sum((i - mi) ** 2 for i in range(k))
    print(f"  {label:22s} {k} ticks: {slope:8.3f} / {(t[-1] - t[0]) / (k - 1):8.3f} / {lower_envelope(t):8.3f}")
