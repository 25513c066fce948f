#!/usr/bin/env python3
"""Not adopted (session 24): the kernels that ran faster in the round priced unit by unit at
that unit's own mean power (its energy per invocation / its time), the slower ones at the
idle power as now, over every kept answer of sessions 17-24 (context cache, against the model
in the same call, no caveat on the target), each answered again by the committed kc (the
power limit's bound applied after). Session 22's ebar.sh tried the same on the term's sum.
Run from the repository root after `cargo build --release`:
    python3 docs/results/2026-11-27-session24/unitpower.py > docs/results/2026-11-27-session24/unitpower.txt
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kept import answers, limit_term

rows = []
for call, model, p, I in answers():
    if p.get("target_caveat"):
        continue
    tr = (I.get("isolated") or {}).get("transitions") or {}
    ruk = tr.get("round_unit_kernels") or []
    units = {u["id"]: u for u in I["units"] if u["status"] == "ok"}
    idle = I["idle"]["avg_power_w"] if I.get("idle") else None
    lim = limit_term(p)
    kern = [x for x in p["terms"] if x["what"].startswith("kernels slower")]
    e_parts = p["predicted_energy_j"] - (lim["energy_j"] if lim else 0)
    alt = None
    if ruk and kern and idle:
        add = 0.0
        ok = True
        for k in ruk:
            u = units.get(k["unit"])
            if not u or not u.get("energy") or not u.get("time_us"):
                ok = False
                break
            d = (k["round_us"] - k["alone_us"]) * u["invocations"]
            pu = u["energy"]["per_item_j"]["mean"] / (u["time_us"]["mean"] * 1e-6)
            add += d * 1e-6 * (pu if d < 0 else idle)
        if ok:
            alt = e_parts - kern[0]["energy_j"] + add
            lw = I["device"].get("power_limit_w")
            if lw:
                alt = min(alt, lw * p["predicted_us"] * 1e-6)
    te = p["target_energy_j"]
    rows.append((call, model, p["energy_error_pct"], None if alt is None else 100 * (alt / te - 1)))
have=[r for r in rows if r[3] is not None]
print(len(rows),"answers;",len(have),"with the round's kernels by unit")
w=lambda k: sum(1 for r in have if abs(r[k])<=3)
print("within 3 %%: as priced %d, faster kernels at their unit's power %d"%(w(2),w(3)))
for r in have:
    if (abs(r[2])<=3)!=(abs(r[3])<=3) or abs(r[3]-r[2])>1.5:
        print("  %-28s %-34s %+6.1f -> %+6.1f"%r)
