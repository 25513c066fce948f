#!/usr/bin/env python3
"""The GPU's power limit as a bound on the predicted energy (session 24), against every
answer kept since session 17: each results file answered again by the committed `kc report`
(context cache, against the model measured in the same call), and where the parts asked for
more than the limit over the predicted time, the energy's error without the bound and with it.
Run from the repository root after `cargo build --release`:
    python3 docs/results/2026-11-27-session24/limit.py > docs/results/2026-11-27-session24/limit.txt
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kept import answers, limit_term

rows = []
for call, model, p, iso in answers():
    dev = iso.get("device", {})
    limit = limit_term(p)
    e = p["predicted_energy_j"]
    parts = e - (limit["energy_j"] if limit else 0.0)
    te, tt = p["target_energy_j"], p["target_us"]
    rows.append(dict(call=call, model=model,
                     gpu=dev.get("name", "?").replace("NVIDIA ", ""),
                     limit_w=dev.get("power_limit_w"), parts_w=parts / (p["predicted_us"] * 1e-6),
                     model_w=te / (tt * 1e-6), time=p["error_pct"],
                     before=100 * (parts / te - 1), after=p["energy_error_pct"], bound=bool(limit),
                     outside=p.get("energy_outside")))
print(f"{len(rows)} answers re-reported (sessions 17-24, context cache, against the model in the same call)")
hit = [r for r in rows if r["bound"]]
print(f"the parts asked for more than the power limit on {len(hit)}:")
print(f"{'call':28} {'model':34} {'GPU':18} {'limit':>6} {'parts':>6} {'model':>6} {'time %':>7} {'energy % before':>16} {'after':>7} {'outside bar':>11}")
for r in hit:
    print(f"{r['call']:28} {r['model']:34} {r['gpu'][:18]:18} {r['limit_w']:6.0f} {r['parts_w']:6.0f} {r['model_w']:6.0f} "
          f"{r['time']:+7.1f} {r['before']:+16.1f} {r['after']:+7.1f} {str(r['outside']):>11}")
within = lambda k: sum(1 for r in rows if abs(r[k]) <= 3.0)
print(f"energy within 3 %: {within('before')} of {len(rows)} without the bound, {within('after')} with it")
near = [r for r in rows if not r["bound"] and r["model_w"] > 0.95 * (r["limit_w"] or 1e9)]
print(f"models measured within 5 % of the limit whose parts stayed under it: {len(near)}")
for r in near:
    print(f"  {r['call']:28} {r['model']:34} parts {r['parts_w']:.0f} W, model {r['model_w']:.0f} W, energy {r['after']:+.1f} %")
