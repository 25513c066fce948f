"""Session 54, without a GPU: where `kc run`'s time went on ConvNeXt-T's training step
(session 53's call 4, `c/convnext_tiny_train.kc/convnext_tiny_train/plan.isolated.context.json`),
tick by tick of the energy counter (100 ms). For the units alone: how many ticks passed
from one unit's last window to the next unit's first (1 is the least: a window cannot
begin at the tick that ends the one before), and the changeovers modelled as the gap from
one window's end to the next unit's timed launches, plus 8 ms to see the tick, rounded up
to whole ticks: as recorded, with the CUPTI records (`setup_ms.record`) moved to a phase
of their own (their own time and 8 ms each added), and with 20 ms fewer launches queued
behind each window. For the units after their lead-ins: their windows, the ticks between
them, and the changeovers.

    python3 docs/results/2026-11-30-session54/ticks.py > docs/results/2026-11-30-session54/ticks.txt
"""
import collections
import json
import math
import os
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
member = "c/convnext_tiny_train.kc/convnext_tiny_train/plan.isolated.context.json"
with tempfile.TemporaryDirectory() as w:
    tarfile.open(f"{here}/../2026-11-30-session53/call4-c-kc-zz12.txz").extract(member, w, filter="data")
    d = json.load(open(f"{w}/{member}"))
W = d["windows"]
print("phases:", ", ".join(f"{p['phase']} {p['seconds']:.1f} s" for p in d["isolated"]["phases"]))
prev, gaps, units = None, collections.Counter(), []
for u in d["units"]:
    ws = [W[i] for i in (u.get("energy") or {}).get("windows", [])]
    if prev is not None and ws:
        gaps[round((ws[0]["start_unix_ms"] - prev) / 100)] += 1
        units.append((u["measured_start_unix_ms"] - prev, u["setup_ms"]["record"]))
    if ws:
        prev = ws[-1]["end_unix_ms"]
print(f"units alone: {len(units)} changeovers; ticks from one unit's last window to the next's first:",
      ", ".join(f"{k}: {v}" for k, v in sorted(gaps.items())))
walls = sorted(u["wall_ms"] for u in d["units"] if u.get("wall_ms"))
print(f"  a unit's whole measurement, median {walls[len(walls) // 2]:.0f} ms; from a window's end to the next unit's timed launches, median {sorted(g for g, _ in units)[len(units) // 2]} ms")
for what, cut_record, cut_queue in (("as recorded", False, 0), ("records in a phase of their own", True, 0),
                                    ("20 ms fewer launches queued", False, 20)):
    ticks = sum(math.ceil((g - (r if cut_record else 0) - cut_queue + 8) / 100) for g, r in units)
    extra = sum(r + 8 for _, r in units) if cut_record else 0
    print(f"  changeovers modelled, {what}: {ticks * 100 / 1000:.1f} s" + (f" + the records' own {extra / 1000:.1f} s" if extra else ""))
lw = [x for x in W if "lead-in" in x["label"]]
between = [lw[i + 1]["start_unix_ms"] - lw[i]["end_unix_ms"] for i in range(len(lw) - 1)]
ticks = collections.Counter(round(b / 100) for b in between)
span = (lw[-1]["end_unix_ms"] - lw[0]["start_unix_ms"]) / 100
print(f"units after their lead-ins: {len(lw)} windows over {span:.0f} ticks; ticks between windows:",
      ", ".join(f"{k}: {v}" for k, v in sorted(ticks.items())),
      f"(changeovers {sum(v for k, v in ticks.items() if k)}, {sum(k * v for k, v in ticks.items())} ticks)")
