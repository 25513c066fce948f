"""Session 25's figures from its calls' results (no GPU): each model's answer reported again
with the committed kc (`cargo build --release` first), and per model

1. the prediction against the model's CUDA graph (time / energy %), and the units after
   their lead-ins (`--lead-in-units`, calls 1-2: the one step before each invocation;
   calls 4-5: back to the nearest of the 4 steps before it that shares a place with it):
   their sums against the same units alone, the plain sum and the prediction with them;
2. per unit, the time the units after their lead-ins saved against what the round's
   kernels saved (CUPTI, by unit), Σ × invocations;
3. call 3 (`--units-restoring-all`): every unit from the model's values at every launch
   against the same units as they ran;
4. the units' window temperature (weighted by their energy, as session 20's figures.py)
   against kc's graph's windows, and the idle GPU's power against its temperature at the
   high clock over each call's nvidia-smi samples (a least-squares slope);
5. calls 6-8 (kc-u, kc-v, kc-w; kc run's defaults): the spin's power at the start and the end of the
   isolated pass, and the term that takes the units' energy to the target's temperature.

Run from the repository root: python3 docs/results/2026-11-28-session25/figures.py
"""
import json, os, subprocess, tarfile, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KC = os.path.join(HERE, "..", "..", "..", "target", "release", "kc")
CALLS = [("call1-a-kc-r", "1 step"), ("call2-b-kc-r", "1 step"), ("call3-c-kc-s", None),
         ("call4-d-kc-t", "to a shared place"), ("call5-e-kc-t", "to a shared place"),
         ("call6-f-kc-u", None), ("call7-g-kc-v", None),
         ("call8-h-kc-w", None)]


def report(part, name, tmp):
    d = os.path.join(tmp, part, f"{name}.kc", name)
    out = os.path.join(d, "report25")
    subprocess.run([KC, "report", f"{d}/plan.graph.json", "--isolated",
                    f"{d}/plan.isolated.context.json", "--reference",
                    f"{tmp}/{part}/reference.json", "--reference-entry", name, "-o", out,
                    "--json"], check=True, capture_output=True)
    return json.load(open(os.path.join(out, "report.json"))), d


def pct(x):
    return "-" if x is None else f"{x:+.1f}"


rows, times, restored, temps, slopes, leaks = [], [], [], [], [], []
with tempfile.TemporaryDirectory() as tmp:
    for call, leads in CALLS:
        with tarfile.open(os.path.join(HERE, call + ".txz")) as t:
            t.extractall(tmp)
        part = call.split("-")[1]
        # The idle GPU at the high clock (under 160 W, SM clock over 1900 MHz).
        pts = []
        for line in open(os.path.join(tmp, part, "smi.csv")):
            f = [x.strip() for x in line.split(",")]
            try:
                clk, pw, t = float(f[1].split()[0]), float(f[2].split()[0]), float(f[3])
            except (ValueError, IndexError):
                continue
            if pw < 160 and clk > 1900:
                pts.append((t, pw))
        if len(pts) > 10:
            mx = sum(a for a, _ in pts) / len(pts)
            my = sum(b for _, b in pts) / len(pts)
            sl = sum((a - mx) * (b - my) for a, b in pts) / sum((a - mx) ** 2 for a, _ in pts)
            slopes.append((call[:5], len(pts), f"{min(a for a, _ in pts):.0f}-{max(a for a, _ in pts):.0f}", f"{sl:.2f}"))
        for name in sorted(os.listdir(os.path.join(tmp, part))):
            if not name.endswith(".kc"):
                continue
            name = name[:-3]
            rep, d = report(part, name, tmp)
            p = rep["prediction"]
            iso = json.load(open(f"{d}/plan.isolated.context.json"))
            l = p.get("lead_in_units")
            rows.append((call[:5], name, leads or "-", pct(p["error_pct"]),
                         pct(p["energy_error_pct"]),
                         f"{100 * (l['led_j'] / l['alone_j'] - 1):+.1f}" if l else "-",
                         f"{l['units']}/{l['capped']}" if l else "-",
                         pct(l.get("plain_energy_error_pct")) if l else "-",
                         pct(l.get("energy_error_pct")) if l else "-",
                         pct(p["plain_energy_error_pct"])))
            units = {u["id"]: u for u in iso["units"]}
            rk = iso["isolated"]["transitions"].get("round_unit_kernels", [])
            if l:
                dr = dl = 0.0
                for k in rk:
                    u = units[k["unit"]]
                    a = u.get("after_lead_in")
                    if not a:
                        continue
                    n = u["invocations"]
                    dr += (k["round_us"] - k["alone_us"]) * n
                    dl += (a["time_us"] - u["time_us"]["mean"]) * n
                alone = sum(u["time_us"]["mean"] * u["invocations"] for u in iso["units"]
                            if u.get("after_lead_in"))
                times.append((call[:5], name, leads, f"{dr:.0f}", f"{dl:.0f}",
                              f"{100 * dl / alone:+.1f}"))
            lk = iso["isolated"].get("leakage")
            if lk:
                term = [t for t in p["terms"] if "°C" in t["what"]]
                span = lk["end_c"] - lk["start_c"]
                slope = (lk["end_w"] - lk["start_w"]) / span
                u = (lk["end_sem_w"] ** 2 + lk["start_sem_w"] ** 2) ** 0.5 / abs(span)
                e = term[0]["energy_j"] if term else None
                leaks.append((call[:5], name, f"{lk['start_w']:.1f} W at {lk['start_c']:.1f}",
                              f"{lk['end_w']:.1f} W at {lk['end_c']:.1f}",
                              f"{slope:.2f} ± {u:.2f}",
                              "-" if e is None else f"{100 * e / (p['predicted_energy_j'] - e):+.2f}",
                              pct(p["energy_error_pct"])))
            gr = json.load(open(f"{d}/plan.graph.json"))
            W = iso["windows"]
            et = ej = 0.0
            for u in iso["units"]:
                en = u.get("energy")
                if en and u.get("predicted_energy_j"):
                    ts = [sum(W[i]["temperature_c"]) / 2 for i in en["windows"]
                          if W[i].get("temperature_c")]
                    if ts:
                        et += u["predicted_energy_j"] * sum(ts) / len(ts)
                        ej += u["predicted_energy_j"]
            gt = [sum(x["temperature_c"]) / 2 for x in gr["windows"] if x["label"] == "graph"]
            temps.append((call[:5], name, f"{et / ej:.1f}", f"{sum(gt) / len(gt):.1f}",
                          f"{et / ej - sum(gt) / len(gt):+.1f}", pct(p["energy_error_pct"])))
            asked = [u for u in iso["units"] if (u.get("restoring") or {}).get("asked")]
            if asked:
                e = sum(u["energy"]["per_item_j"]["mean"] * u["invocations"] for u in asked)
                e0 = sum(u["restoring"]["as_it_ran_energy_j"] * u["invocations"] for u in asked)
                t1 = sum(u["time_us"]["mean"] * u["invocations"] for u in asked)
                t0 = sum(u["restoring"]["as_it_ran_us"] * u["invocations"] for u in asked)
                restored.append((call[:5], name, len(asked), f"{100 * (t1 / t0 - 1):+.1f}",
                                 f"{100 * (e1 / e0 - 1):+.1f}" if (e1 := e) else "-",
                                 pct(p["energy_error_pct"])))

print("1. Against the model's CUDA graph (same call), %: the prediction, and with the units")
print("   after their lead-ins (units measured / of them held down by the cap, left out)")
print("| call | model | lead-ins | time | energy | units led vs alone, energy | units/capped | plain with them | prediction with them | plain |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
print("2. Time, us per replay, Σ × invocations: the round's kernels by unit less alone (CUPTI)")
print("   against the units after their lead-ins less alone")
print("| call | model | lead-ins | round's kernels | after lead-ins | after lead-ins, % of alone |")
print("|---|---|---|---|---|---|")
for r in times:
    print("| " + " | ".join(r) + " |")
print()
print("3. Every unit from the model's values at every launch (--units-restoring-all), against")
print("   the same units as they ran, %")
print("| call | model | units | time | energy | the prediction's energy (it takes these) |")
print("|---|---|---|---|---|---|")
for r in restored:
    print("| " + " | ".join(str(x) for x in r) + " |")
print()
print("4. The units' energy-weighted window temperature against kc's graph's, °C, and the")
print("   prediction's energy error (%); the idle GPU's power against its temperature")
print("| call | model | units | kc's graph | difference | prediction's energy |")
print("|---|---|---|---|---|---|")
for r in temps:
    print("| " + " | ".join(r) + " |")
print("| call | idle samples at the high clock | °C | W per °C |")
print("|---|---|---|---|")
for r in slopes:
    print("| " + " | ".join(str(x) for x in r) + " |")
print()
print("5. The spin's power at the start and the end of the isolated pass (°C), its slope")
print("   (W/°C, ± one standard error; a term only where over twice that), the term's share")
print("   of the prediction's energy (%) and the prediction's energy error (%)")
print("| call | model | start | end | W per °C | term | prediction's energy |")
print("|---|---|---|---|---|---|---|")
for r in leaks:
    print("| " + " | ".join(r) + " |")
