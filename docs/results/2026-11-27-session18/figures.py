#!/usr/bin/env python3
"""Session 18: every figure the notes quote, from the calls' tarballs. No GPU. Run from the
repository root:
    python3 docs/results/2026-11-27-session18/figures.py
Calls 1-3 (kc-u: units whose repeats alone ran their values away measured again, every
launch from the model's values at their places), 4-5 (kc-v: also each invocation's integer
operands as the model held them, where later tensors overwrote their places in the image;
call 5 keeps Qwen3-MoE's plan and traces; the mechanism kept no step in any of the three
models and was reverted), 6 (kc-w: also a bound read's stand-in takes its
producer's values in the model pass). Each model was captured, answered by `kc run
--reference` and measured again in the same call, on one H200."""
import csv, glob, json, os, statistics, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
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


print("== The prediction against the model's CUDA graph, measured back to back in the same call")
print("%-24s %-14s %-15s %-16s %-14s %-9s %s" % (
    "model", "call", "plain t/e %", "prediction t/e", "kc graph t/e", "kc run s",
    "restored units: n, their energy as they ran → now (J per replay), prediction's energy error had they stood"))
rows = []
for call in calls:
    for n, d, part in models(call):
        rp = os.path.join(d, "report", "report.json")
        if not os.path.exists(rp):
            continue
        r = json.load(open(rp))
        p = r.get("prediction")
        if not p or p.get("error_pct") is None:
            continue
        g = next((row for row in r["model"]["rows"] if row["what"].startswith("kc graph")), None)
        iso = json.load(open(os.path.join(d, "plan.isolated.context.json")))
        rest = [u for u in iso["units"] if u.get("restoring")]
        now_j = sum(u["energy"]["per_item_j"]["mean"] * u["invocations"] for u in rest if u.get("energy"))
        ran_j = sum((u["restoring"].get("as_it_ran_energy_j") or 0) * u["invocations"] for u in rest)
        had = pct(p["predicted_energy_j"] - (now_j - ran_j), p["target_energy_j"]) if rest else None
        secs = None
        for line in open(os.path.join(part, "summary.txt")):
            if line.startswith(n + " rc="):
                secs = int(line.split()[2]) / 1000.0
        rv = [abs(float(x["round_vs_in_context_pct"])) for x in csv.DictReader(open(os.path.join(d, "report", "units.csv")))
              if x.get("round_vs_in_context_pct")]
        iv = [abs(float(x["isolated_vs_in_context_pct"])) for x in csv.DictReader(open(os.path.join(d, "report", "units.csv")))
              if x.get("isolated_vs_in_context_pct")]
        rows.append((n, call, p, g, secs, rest, now_j, ran_j, had, rv, iv, len(iso["units"])))
        print("%-24s %-14s %+6.1f / %+5.1f  %+5.1f / %+5.1f   %+5.1f / %+5.1f %7.1f   %s" % (
            n, call, p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"], p["energy_error_pct"],
            g["time_vs_model_pct"], g["energy_vs_model_pct"], secs or float("nan"),
            ("%d, %.4f → %.4f, %+.1f %%" % (len(rest), ran_j, now_j, had)) if rest else "none"))

# The latest answer per model (Qwen3-MoE's and T5's from call 6, with every fix).
latest = {}
for row in rows:
    latest[row[0]] = row
print()
print("== Latest per model (%d models)" % len(latest))
t_ok = [n for n, r in latest.items() if abs(r[2]["error_pct"]) <= 2]
e_ok = [n for n, r in latest.items() if abs(r[2]["energy_error_pct"]) <= 3]
both = [n for n in t_ok if n in e_ok]
pt = [n for n, r in latest.items() if abs(r[2]["plain_error_pct"]) <= 2]
pe = [n for n, r in latest.items() if abs(r[2]["plain_energy_error_pct"]) <= 3]
print("prediction: time within 2 %% on %d, energy within 3 %% on %d, both %d" % (len(t_ok), len(e_ok), len(both)))
print("plain sum:  time within 2 %% on %d, energy within 3 %% on %d" % (len(pt), len(pe)))
print("misses: " + ", ".join("%s %+.1f / %+.1f" % (n, r[2]["error_pct"], r[2]["energy_error_pct"])
                             for n, r in latest.items() if n not in both))
out_t = sum(1 for r in latest.values() if r[2].get("time_outside"))
out_e = sum(1 for r in latest.values() if r[2].get("energy_outside"))
print("the model outside the prediction ± 2u: time %d, energy %d of %d" % (out_t, out_e, len(latest)))
print("per unit, the round against kc's graph, median |error| per model: %s" % ", ".join(
    "%s %.1f" % (n, statistics.median(r[9])) for n, r in latest.items() if r[9]))
print("per unit, alone against kc's graph, median |error| per model: %s" % ", ".join(
    "%s %.1f" % (n, statistics.median(r[10])) for n, r in latest.items() if r[10]))
print("kc run seconds (units): %s" % ", ".join("%s %.1f (%d)" % (n, r[4], r[11]) for n, r in latest.items()))

print()
print("== Qwen3-MoE's grouped GEMMs, alone against the trace, by call")
for call in calls:
    for n, d, part in models(call):
        if not n.startswith("qwen3_moe"):
            continue
        iso = json.load(open(os.path.join(d, "plan.isolated.context.json")))
        for u in iso["units"]:
            if u["label"] == "aten::_grouped_mm":
                print("%-14s unit %d: alone %.1f us, traced %.1f us, %.0f W" % (
                    call, u["id"], u["time_us"]["mean"], u["traced_mean_us"], u["energy"]["avg_power_w"]["mean"]))
