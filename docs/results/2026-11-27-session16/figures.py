#!/usr/bin/env python3
"""Session 16: the figures docs/MEASUREMENTS.md and README quote beside the tables, from the
results files (no GPU, no kc build):
  - EfficientNet-V2-S in session 15 (call 4): by op, the round's kernels × invocations against
    alone and against kc's graph (the SE means, the residual adds); and in session 16's call
    1, by op, the round with lead-ins and the same call's round without them against kc's
    graph;
  - per model of calls 1-5: the mean power of the units alone (plain Σ energy / Σ time), of
    the model, and of the round of every unit;
  - VGG-16-BN: the power of its units alone by op (one-tick windows);
  - T5's graph (call 3): its largest units' kernels in the round against kc's graph.
    python3 docs/results/2026-11-27-session16/figures.py
"""
import collections, csv, glob, json, os, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
w = tempfile.mkdtemp()
for t in sorted(glob.glob(os.path.join(here, "call[1-5]-*.txz"))):
    subprocess.run(["tar", "xJf", t, "-C", w], check=True)
os.makedirs(os.path.join(w, "s15"))
subprocess.run(["tar", "xJf", os.path.join(here, "..", "2026-11-27-session15", "call4-h200b-kc-h.txz"),
                "-C", os.path.join(w, "s15")], check=True)


def by_op(d, results="plan.isolated.context.json"):
    """Per op label: Σ round, Σ kc graph, Σ alone kernels × invocations, over units in all."""
    rows = {int(r["unit"]): r for r in csv.DictReader(open(os.path.join(d, "report", "units.csv")))}
    t = json.load(open(os.path.join(d, results)))["isolated"]["transitions"]
    g = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for x in t["round_unit_kernels"]:
        r = rows[x["unit"]]
        if not r["in_context_mean_us"]:
            continue
        n = int(r["invocations"])
        v = g[r["label"]]
        v[0] += x["round_us"] * n
        v[1] += float(r["in_context_mean_us"]) * n
        v[2] += x["alone_us"] * n
    return g


print("EfficientNet-V2-S, session 15 (round without lead-ins), by op: round − alone, round vs kc graph")
for op, (rd, gr, al) in sorted(by_op(os.path.join(w, "s15", "h200b", "effnet_v2_s.kc", "effnet_v2_s")).items()):
    print("  %-26s round − alone %+7.1f us   round vs kc graph %+6.1f %%" % (op, rd - al, 100 * (rd - gr) / gr))

print("\nEfficientNet-V2-S, session 16 call 1, by op: round vs kc graph, with lead-ins / without (same call)")
d = os.path.join(w, "a", "effnet_v2_s.kc", "effnet_v2_s")
lead, nolead = by_op(d), by_op(d, "plan.isolated.nolead.json")
for op in sorted(lead):
    (a, g, _), (b, _, _) = lead[op], nolead[op]
    print("  %-26s %+6.1f %% / %+6.1f %%" % (op, 100 * (a - g) / g, 100 * (b - g) / g))

print("\nMean power, W: units alone (plain Σ), the model, the round of every unit")
for d in sorted(glob.glob(os.path.join(w, "[a-e]", "*.kc", "*"))):
    p = json.load(open(os.path.join(d, "report", "report.json")))["prediction"]
    t = json.load(open(os.path.join(d, "plan.isolated.context.json")))["isolated"]["transitions"]
    print("  %-22s units %4.0f  model %4.0f  round %s" % (
        os.path.basename(d), p["plain_energy_j"] / p["plain_us"] * 1e6,
        p["target_energy_j"] / p["target_us"] * 1e6,
        "%4.0f" % t["round_power_w"] if t.get("round_power_w") else "-"))

print("\nVGG-16-BN, units alone by op: mean power over their windows, W (least, greatest)")
iso = json.load(open(os.path.join(w, "c", "vgg16_bn.kc", "vgg16_bn", "plan.isolated.context.json")))
pw = collections.defaultdict(list)
for u in iso["units"]:
    if u.get("energy"):
        pw[u["label"]].append(u["energy"]["avg_power_w"]["mean"])
for op, v in sorted(pw.items()):
    print("  %-34s %2d units  %4.0f … %4.0f" % (op, len(v), min(v), max(v)))

print("\nT5's graph, call 3: the units whose kernels add most in the round against kc's graph")
d = os.path.join(w, "c", "t5_graph.kc", "t5_graph")
rows = {int(r["unit"]): r for r in csv.DictReader(open(os.path.join(d, "report", "units.csv")))}
t = json.load(open(os.path.join(d, "plan.isolated.context.json")))["isolated"]["transitions"]
out = []
for x in t["round_unit_kernels"]:
    r = rows[x["unit"]]
    if r["in_context_mean_us"]:
        c = float(r["in_context_mean_us"])
        out.append(((x["round_us"] - c) * int(r["invocations"]), r["label"], r["call"][:48], c, x["round_us"]))
for o in sorted(out, reverse=True)[:6]:
    print("  %+6.1f us  %-14s %-48s graph %6.2f  round %6.2f us (%+.0f %%)" % (*o, 100 * (o[4] - o[3]) / o[3]))
subprocess.run(["rm", "-rf", w])
