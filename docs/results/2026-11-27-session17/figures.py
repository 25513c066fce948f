#!/usr/bin/env python3
"""Session 17: every figure the notes quote, from the calls' tarballs. No GPU; needs
`cargo build --release` (kc report, for T5's plain round). Run from the repository root:
    python3 docs/results/2026-11-27-session17/figures.py
Calls: 1 (kc-r: capture.py counting completed calls, clocks in windows, the round as in
session 16, T5's and ViT-B/32's round variants), 2 (kc-s: the round restoring the model's
values at every launch, units that met the power cap measured again at a duty cycle; T5's
plain round beside it), 3-5 (kc-t, the same defaults; call 5's capture.py queues at least
50 ms)."""
import glob, json, os, statistics, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
kc = os.path.join(root, "target", "release", "kc")
w = tempfile.mkdtemp()
calls = {}
for t in sorted(glob.glob(os.path.join(here, "call*.txz"))):
    name = os.path.basename(t)[:-4]
    d = os.path.join(w, name)
    os.makedirs(d)
    subprocess.run(["tar", "xJf", t, "-C", d], check=True)
    calls[name] = d


def models(call):
    """(name, model dir, part dir) of every model a call answered."""
    for part in sorted(glob.glob(os.path.join(calls[call], "*"))):
        for d in sorted(glob.glob(os.path.join(part, "*.kc", "*"))):
            yield os.path.basename(d), d, part


def pct(a, b):
    return 100.0 * (a - b) / b


print("== The prediction, against the model's CUDA graph measured back to back in the same call")
print("%-22s %-14s %-15s %-15s %-14s %s" % ("model", "call", "plain t/e %", "prediction t/e", "kc graph t/e", "energy without the duty cycle; units measured at a duty"))
latest = {}
for call in calls:
    for n, d, part in models(call):
        r = json.load(open(os.path.join(d, "report", "report.json")))
        p = r.get("prediction")
        if not p:
            continue
        it = r.get("iterations_per_replay") or 1
        g = next((row for row in r["model"]["rows"] if row["what"].startswith("kc graph")), None)
        iso = json.load(open(os.path.join(d, "plan.isolated.context.json")))
        duty = [u for u in iso["units"] if u.get("energy_at_duty")]
        d_j = sum((u["energy"]["per_item_j"]["mean"] - u["energy_at_duty"]["alone_per_item_j"]) * u["invocations"] for u in duty)
        without = pct(p["predicted_energy_j"] - d_j, p["target_energy_j"])
        import csv
        rv = [abs(float(x["round_vs_in_context_pct"])) for x in csv.DictReader(open(os.path.join(d, "report", "units.csv")))
              if x.get("round_vs_in_context_pct")]
        rmed = statistics.median(rv) if rv else float("nan")
        secs = None
        for line in open(os.path.join(part, "summary.txt")):
            if line.startswith(n + " rc="):
                secs = int(line.split()[2]) / 1000.0
        row = (n, call, p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"], p["energy_error_pct"],
               g and g.get("time_vs_model_pct"), g and g.get("energy_vs_model_pct"), without, len(duty),
               p.get("time_outside"), p.get("energy_outside"), secs, len(iso["units"]), rmed)
        print("%-22s %-14s %+5.1f / %+5.1f  %+5.1f / %+5.1f   %s   %+5.1f %%; %d" % (
            n, call, *row[2:6], "%+4.1f / %+4.1f" % (row[6], row[7]) if g else "  -  ", without, len(duty)))
        if call != "call1-a-kc-r" and not (n == "qwen2_train" and call == "call4-c-kc-t"):
            latest[n] = row
print("\n== With this session's defaults (calls 2-5; Qwen2 from call 5, its reference queued deeper): %d models" % len(latest))
ok = lambda v, lim: abs(v) <= lim
rows = list(latest.values())
for what, t_i, e_i in (("plain", 2, 3), ("prediction", 4, 5)):
    t = sum(ok(r[t_i], 2.0) for r in rows)
    e = sum(ok(r[e_i], 3.0) for r in rows)
    b = sum(ok(r[t_i], 2.0) and ok(r[e_i], 3.0) for r in rows)
    print("%-11s time within 2 %%: %d of %d; energy within 3 %%: %d; both: %d" % (what, t, len(rows), e, b))
e = sum(ok(r[8], 3.0) for r in rows)
print("prediction, the units at the power cap as their windows alone gave them: energy within 3 %%: %d of %d" % (e, len(rows)))
print("the model outside the prediction ± 2u: time %d of %d, energy %d" % (
    sum(bool(r[10]) for r in rows), len(rows), sum(bool(r[11]) for r in rows)))
rm = sorted(r[14] for r in rows)
print("each unit's kernels in the round against kc's graph, per-unit median |%%|: %.1f-%.1f over %d models, within 3 %% on %d; " % (
    rm[0], rm[-1], len(rows), sum(x <= 3.0 for x in rm)) + ", ".join("%s %.1f" % (r[0], r[14]) for r in rows))
print("kc run: " + ", ".join("%s %.1f s (%d units)" % (r[0], r[12], r[13]) for r in sorted(rows, key=lambda r: r[13])))
print("misses: " + "; ".join("%s %+.1f / %+.1f" % (r[0], r[4], r[5]) for r in rows if not (ok(r[4], 2.0) and ok(r[5], 3.0))))

print("\n== kc's graph against the model (power, same kernels): capture.py's count")
diffs = []
for call in calls:
    for n, d, part in models(call):
        ref = json.load(open(os.path.join(part, "reference.json")))["results"][n]["cuda_graph"]
        g = json.load(open(os.path.join(d, "plan.graph.json")))["graph"]
        rep = g["replay_us"]["mean"]
        it = round(rep / ref["back_to_back_us"])
        ej = g["energy"]["per_item_j"]["mean"] * 1000 / it
        diffs.append(pct(ej / (rep / it), ref["back_to_back_energy_per_run_mj"] / ref["back_to_back_us"]))
print("session 17 (%d measurements): kc's graph's power over the model's, median %+.1f %%, range %+.1f … %+.1f %%" % (
    len(diffs), statistics.median(diffs), min(diffs), max(diffs)))

print("\n== Units alone at the power limit (call 1, kc-r: windows as before)")
for n, d, part in models("call1-a-kc-r"):
    iso = json.load(open(os.path.join(d, "plan.isolated.context.json")))
    W = iso["windows"]
    uw = [W[i] for u in iso["units"] if u.get("energy") for i in u["energy"]["windows"]]
    capped = [x for x in uw if x.get("clock_event_bits", 0) & 4]
    clk = [x["sm_clock_mhz"]["p50"] for x in uw if x.get("sm_clock_mhz")]
    gw = [W[i] for i in json.load(open(os.path.join(d, "plan.graph.json")))["graph"]["energy"]["windows"]]
    print("%-12s power cap in %d of %d unit windows; their SM clock %0.f-%0.f MHz (kc graph's windows: %s)" % (
        n, len(capped), len(uw), min(clk), max(clk), sorted({x.get("sm_clock_mhz", {}).get("p50") for x in json.load(open(os.path.join(d, "plan.graph.json")))["windows"] if x["label"] == "graph"})))

print("\n== T5's round: its units' kernels in the round against kc's graph (CUPTI)")
import csv
def round_vs_graph(d, f):
    rows = {int(r["unit"]): r for r in csv.DictReader(open(os.path.join(d, "report", "units.csv")))}
    t = json.load(open(os.path.join(d, f)))["isolated"]["transitions"]
    rk = {x["unit"]: x["round_us"] for x in t.get("round_unit_kernels", [])}
    common = [u for u, r in rows.items() if r["in_context_mean_us"] and u in rk]
    n = lambda u: int(rows[u]["invocations"])
    g = sum(float(rows[u]["in_context_mean_us"]) * n(u) for u in common)
    a = sum(rk[u] * n(u) for u in common)
    med = statistics.median(abs(rk[u] / float(rows[u]["in_context_mean_us"]) - 1) * 100 for u in common)
    return pct(a, g), med, t.get("round_cycles"), bool(t.get("round_restoring")), t.get("round_extra_us")
for call, names in (("call1-a-kc-r", ("context", "default", "cycles9", "restoring2", "restoring")), ("call2-a-kc-s", ("context", "plain"))):
    for n, d, part in models(call):
        if n not in ("t5_graph", "vit_b_32"):
            continue
        for v in names:
            f = "plan.isolated.%s.json" % v
            if not os.path.exists(os.path.join(d, f)):
                continue
            s, med, cyc, rest, x = round_vs_graph(d, f)
            print("%-9s %-13s %-10s cycles %2s %-9s: Σ %+.1f %%, per unit median |%.1f| %%, %.2f us per switch" % (
                n, call, v, cyc, "restoring" if rest else "plain", s, med, x))
# T5's time prediction with call 2's plain round (the same plan, the same call).
for n, d, part in models("call2-a-kc-s"):
    if n != "t5_graph" or not os.path.exists(kc):
        continue
    out = os.path.join(w, "t5plain")
    subprocess.run([kc, "report", os.path.join(d, "plan.graph.json"), "--isolated", os.path.join(d, "plan.isolated.plain.json"),
                    "--reference", os.path.join(part, "reference.json"), "--reference-entry", n, "-o", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p = json.load(open(os.path.join(out, "report.json")))["prediction"]
    r = json.load(open(os.path.join(d, "report", "report.json")))["prediction"]
    print("t5_graph call 2: prediction time %+.1f %% with the round restoring (default), %+.1f %% with the plain round (same plan, same call)" % (r["error_pct"], p["error_pct"]))
print("\n== Units whose repeats alone ran their values away (kc's rule: zeros up more than 20 points or non-finite more than 1): share of the plain energy")
for call, n in (("call2-a-kc-s", "t5_graph"), ("call2-a-kc-s", "llama_train"), ("call5-d-kc-t", "convnext_small")):
    d = next(x[1] for x in models(call) if x[0] == n)
    units = json.load(open(os.path.join(d, "plan.isolated.context.json")))["units"]
    tot = sum(u["predicted_energy_j"] or 0 for u in units)
    away = [u for u in units if u.get("values") and (u["values"]["zero_after_pct"] - u["values"]["zero_before_pct"] > 20
            or u["values"]["nonfinite_after_pct"] - u["values"]["nonfinite_before_pct"] > 1)]
    print("%-15s %d units, %.1f %% of the plain energy: " % (n, len(away), 100 * sum(u["predicted_energy_j"] or 0 for u in away) / tot)
          + ", ".join("%s %.1f %% (zeros %.0f→%.0f %%, non-finite %.1f→%.1f %%)" % (
              u["label"], 100 * (u["predicted_energy_j"] or 0) / tot, u["values"]["zero_before_pct"], u["values"]["zero_after_pct"],
              u["values"]["nonfinite_before_pct"], u["values"]["nonfinite_after_pct"]) for u in sorted(away, key=lambda u: -(u["predicted_energy_j"] or 0))[:4]))
subprocess.run(["rm", "-rf", w])
