"""Session 55 (issue 27, deliverable 6), without a GPU: what moving each unit's CUPTI
records out of its changeover would save in `kc run`, modelled on measured parts (call 5,
kc-zz25, ConvNeXt-T's step and T5's graph). A changeover's length g runs from one unit's
last window's end to the next unit's energy series' start (its timed launches' start plus
`setup_ms.to_series`); the next window starts at the counter's first tick after it, so it
takes ceil((g + 5 ms) / 100 ms) ticks (the watcher's read: 5 ms). The model is checked
against the ticks each changeover took; the units whose windows began later than it says
(a capped unit's duty cycle, settling windows) keep their extra ticks. Moved apart, the
records are taken off g and cost their own time plus restore, capture and warm-up again.

    python3 docs/results/2026-11-30-session55/records_apart.py > docs/results/2026-11-30-session55/records_apart.txt
"""
import json
import math
import os
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
with tempfile.TemporaryDirectory() as w:
    tarfile.open(f"{here}/call5-e-kc-zz25.txz").extractall(w, filter="data")
    for n in ("convnext_tiny_train", "t5_graph"):
        d = json.load(open(f"{w}/e/{n}.kc/{n}/plan.isolated.context.json"))
        W, prev, rows = d["windows"], None, []
        for u in d["units"]:
            ws = [W[i] for i in (u.get("energy") or {}).get("windows", [])]
            s = u.get("setup_ms") or {}
            if prev is not None and ws and s.get("to_series") is not None:
                g = u["measured_start_unix_ms"] + s["to_series"] - prev
                took = round((ws[0]["start_unix_ms"] - prev) / 100)
                rows.append((g, took, s["record"], s["restore"] + s["capture"] + s["warm"]))
            if ws:
                prev = ws[-1]["end_unix_ms"]
        ticks = lambda g: max(1, math.ceil((g + 5) / 100))
        model = [ticks(g) for g, *_ in rows]
        matched = sum(m == t for m, (_, t, *_) in zip(model, rows))
        extra = sum(max(0, t - m) for m, (_, t, *_) in zip(model, rows))
        apart = [ticks(g - r) for g, _, r, _ in rows]
        records = sum(r + again for _, _, r, again in rows) / 1000
        took = sum(t for _, t, *_ in rows)
        print(f"{n}: {len(rows)} changeovers, {took} ticks as they ran; the model matches {matched} "
              f"({sum(model)} ticks, {extra} more as they ran)")
        print(f"  records apart: {sum(apart) + extra} ticks ({(took - sum(apart) - extra) / 10:.1f} s fewer), "
              f"the records' own phase {records:.1f} s: net {(took - sum(apart) - extra) / 10 - records:+.1f} s saved")
