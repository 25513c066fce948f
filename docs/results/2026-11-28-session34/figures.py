#!/usr/bin/env python3
"""Session 34's figures (docs/MEASUREMENTS.md, session 34), from the reports chart.sh keeps
with W=DIR and call 4's results:

    W=/tmp/s34 bash docs/results/2026-11-28-session34/chart.sh
    python3 docs/results/2026-11-28-session34/figures.py /tmp/s34

Prints (1) the nine answers of calls 1-3 and call 4's, (2) call 4's units after their
lead-ins by kind and by the units' energy rank, and (3) the price of the terms' time: where
kc's graph of each chart model drew its energy beyond the units alone, between the idle
power and the units' own, and the chart's count within 3 % at a price that far between.
No GPU; `kc` from target/release (KC= to override) for call 4's report."""
import glob, json, os, statistics, subprocess, sys, tarfile, tempfile

w = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
kc = os.environ.get("KC", "target/release/kc")


def row(f):
    d = json.load(open(f))
    p = d["prediction"]
    g = [r for r in d["model"]["rows"] if r["what"].startswith("kc graph")][0]
    return (len(d["units"]), p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"],
            p["energy_error_pct"], g["time_vs_model_pct"], g["energy_vs_model_pct"], p)


# (1) The answers.
print("model (units): plain time / energy, prediction time / energy, kc graph time / energy")
for f in sorted(glob.glob(f"{w}/r/call*-kc-r/*/*/report.json")):
    u, pt, pe, t, e, gt, ge, _ = row(f)
    print(f"  {f.split('/')[-2]:22s} ({u:3d}) {pt:+5.1f} / {pe:+5.1f}  {t:+5.1f} / {e:+5.1f}  {gt:+5.1f} / {ge:+5.1f}")
tmp = tempfile.mkdtemp()
with tarfile.open(f"{here}/call4-d-kc-r.txz") as t:
    t.extractall(tmp)
d4 = f"{tmp}/d/convnext_small_train.kc/convnext_small_train"
subprocess.run([kc, "report", f"{d4}/plan.graph.json", "--isolated", f"{d4}/plan.isolated.context.json",
                "--reference", f"{tmp}/d/reference.json", "--reference-entry", "convnext_small_train",
                "-o", f"{tmp}/report", "--json"], check=True, stdout=subprocess.DEVNULL)
u, pt, pe, t, e, gt, ge, p = row(f"{tmp}/report/report.json")
print(f"  call 4 convnext_small_train ({u}) {pt:+5.1f} / {pe:+5.1f}  {t:+5.1f} / {e:+5.1f}  {gt:+5.1f} / {ge:+5.1f}")
l = p["lead_in_units"]
print(f"  after their lead-ins: {l['units']} units ({l['capped']} capped left out), time "
      f"{100 * (l['led_us'] / l['alone_us'] - 1):+.1f} %, energy {100 * (l['led_j'] / l['alone_j'] - 1):+.1f} %, "
      f"prediction with them {l['energy_error_pct']:+.1f} %")

# (2) Call 4's units after their lead-ins, by kind and by energy rank.
iso = json.load(open(f"{d4}/plan.isolated.context.json"))
kinds, ranked = {}, []
for r in iso["units"]:
    a, e = r.get("after_lead_in"), r.get("energy") or {}
    if not a or a.get("capped_windows") or a.get("energy_j") is None or not e.get("per_item_j"):
        continue
    n = r["invocations"]
    alone_j, led_j = e["per_item_j"]["mean"] * n, a["energy_j"] * n
    alone_us, led_us = r["time_us"]["mean"] * n, a["time_us"] * n
    k = kinds.setdefault(r["label"], [0.0, 0.0, 0.0, 0.0])
    for i, v in enumerate((alone_j, led_j, alone_us, led_us)):
        k[i] += v
print("\nkind: energy after lead-ins vs alone, time (call 4)")
for label, (aj, lj, au, lu) in sorted(kinds.items(), key=lambda kv: kv[1][1] - kv[1][0])[:8]:
    print(f"  {label:34s} {100 * (lj / aj - 1):+5.1f} % at {100 * (lu / au - 1):+5.1f} % time ({lj - aj:+.3f} J)")
units = sorted((r for r in iso["units"] if r.get("predicted_energy_j")), key=lambda r: -r["predicted_energy_j"])
whole = sum(r["predicted_energy_j"] for r in units)
saving = lambda rs: sum((r["after_lead_in"]["energy_j"] - r["energy"]["per_item_j"]["mean"]) * r["invocations"]
                        for r in rs if r.get("after_lead_in") and not r["after_lead_in"].get("capped_windows")
                        and r["after_lead_in"].get("energy_j") is not None and (r.get("energy") or {}).get("per_item_j"))
print(f"\nunits by energy (of {len(units)}): share held, saving after lead-ins (all: {saving(units):+.3f} J)")
for k in (10, 20, 30, 40, 50):
    print(f"  largest {k:3d}: {sum(r['predicted_energy_j'] for r in units[:k]) / whole:.2f} of the energy, {saving(units[:k]):+.3f} J")

# (3) The price of the terms' time, over the chart's 43.
reports = sorted(glob.glob(f"{w}/r/*/*/*/report.json"))
fractions, at = [], {0.0: 0, 0.25: 0, 0.35: 0, 0.5: 0, 1.0: 0}
for f in reports:
    d = json.load(open(f))
    p = d["prediction"]
    idle = d["energy_detail"]["idle_power_w"]
    busy = p["plain_energy_j"] / p["plain_us"] * 1e6
    dt = d["time"]["actual_us"] - p["plain_us"]
    if abs(dt) / p["plain_us"] >= 0.03:
        price = (d["energy"]["actual_j"] - p["plain_energy_j"]) / dt * 1e6
        fractions.append((price - idle) / (busy - idle))
    # The time the terms add that is priced at the idle power.
    at_idle = sum(t["us"] for t in p["terms"] if t.get("energy_j") is not None and t["us"]
                  and abs(t["energy_j"] / (t["us"] * 1e-6) / idle - 1) < 0.05)
    for frac in at:
        e = p["predicted_energy_j"] + frac * (busy - idle) * at_idle * 1e-6
        at[frac] += abs(100 * (e / p["target_energy_j"] - 1)) <= 3.0
print(f"\nthe price of the terms' time: {len(fractions)} of {len(reports)} models 3 % or more from the units "
      f"alone in time; kc's graph's energy beyond them lies {statistics.median(fractions):.2f} of the way from idle "
      f"to the units' power (median; {min(fractions):.2f} ... {max(fractions):.2f})")
for frac, n in at.items():
    print(f"  priced {frac:.2f} of the way: energy within 3 % on {n} of {len(reports)}")

# (4) The round's own energy, where it was measured (`--round-energy`, the chart's answers of
# sessions 17-22): its extra energy per switch over its extra time per switch, as a price
# between the idle power and the units' own.
rounds = []
for f in glob.glob(f"{w}/call*/*/*.kc/*/plan.isolated.context.json"):
    t = (json.load(open(f)).get("isolated") or {}).get("transitions") or {}
    ej, us = t.get("round_extra_energy_j"), t.get("round_extra_us")
    if ej is None or not us:
        continue
    call, part, name = f.split("/")[-5], f.split("/")[-4], f.split("/")[-2]
    rep = next((r for r in (f"{w}/r/{call}/{part}/{name}/report.json", f"{w}/r/{call}/{part}/{name}.again/report.json")
                if os.path.exists(r)), None)
    if rep is None:
        continue
    d = json.load(open(rep))
    p = d["prediction"]
    idle = d["energy_detail"]["idle_power_w"]
    busy = p["plain_energy_j"] / p["plain_us"] * 1e6
    rounds.append((name, us, (ej / (us * 1e-6) - idle) / (busy - idle)))
clear = [x for _, us, x in rounds if abs(us) >= 0.3]
print(f"\nthe round's own energy: {len(rounds)} of the chart's answers measured it; over the {len(clear)} whose round "
      f"added 0.3 us or more per switch, its extra energy lies {statistics.median(clear):.2f} of the way from idle to "
      f"the units' power (median; {min(clear):.2f} ... {max(clear):.2f})")
