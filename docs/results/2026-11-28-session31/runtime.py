#!/usr/bin/env python3
"""Where `kc run`'s time went on session 31's 100-odd-unit answers (no GPU): from the kept
results' timestamps, the graph pass and the isolated pass, and in the isolated pass the
units' energy windows, the other windows (idle, the spin's leak, duty cycles, copies),
the units' timed launches and their set-up (restore, census, capture, warm-up, CUPTI), and
the rest (the pass of the model's steps, the round, waits for the energy counter's tick).
Run from the repository root:
    python3 docs/results/2026-11-28-session31/runtime.py > docs/results/2026-11-28-session31/runtime.txt"""
import datetime
import json
import os
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# (call, part, model, which run): EfficientNet-V2-S's run at kc's default round length is
# its second on the capture (`again`).
ANSWERS = [("call2-b-kc-k", "b", "effnet_v2_s", "again"), ("call3-c-kc-k", "c", "t5_graph", ""),
           ("call3-c-kc-k", "c", "resnext50_train", ""), ("call6-d-kc-k", "d", "qwen2_train", ""),
           ("call6-d-kc-k", "d", "swin_b", "")]


def ms(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000


tmp = tempfile.mkdtemp()
print(f"{'model':16s} {'units':>5s} {'kc run':>7s} {'graph':>6s} {'isolated':>8s} {'unit windows':>12s} "
      f"{'other windows':>13s} {'timed':>6s} {'set-up':>6s} {'rest':>6s}  (seconds)")
for call, part, name, run in ANSWERS:
    d = os.path.join(tmp, call)
    if not os.path.isdir(d):
        with tarfile.open(os.path.join(HERE, call + ".txz")) as t:
            t.extractall(d)
    base = os.path.join(d, part, f"{name}.again.kc" if run else f"{name}.kc", name)
    g = json.load(open(os.path.join(base, "plan.graph.json")))
    i = json.load(open(os.path.join(base, "plan.isolated.context.json")))
    summary = open(os.path.join(d, part, "summary.txt")).read().split("\n")
    key = f"{name} again rc=" if run else f"{name} rc="
    run_s = next(float(l.split()[-2]) / 1000 for l in summary if l.startswith(key))
    graph_s = (ms(g["finished"]) - ms(g["started"])) / 1000
    iso_s = (ms(i["finished"]) - ms(i["started"])) / 1000
    units = [u for u in i["units"] if u.get("measured_start_unix_ms")]
    unit_windows = {w for u in i["units"] for w in ((u.get("energy") or {}).get("windows") or [])}
    win = i.get("windows", [])
    uw = sum(win[k]["duration_s"] for k in unit_windows)
    ow = sum(w["duration_s"] for k, w in enumerate(win) if k not in unit_windows)
    timed = sum(u["measured_end_unix_ms"] - u["measured_start_unix_ms"] for u in units) / 1000
    setup = sum(sum((u.get("setup_ms") or {}).values()) for u in i["units"]) / 1000
    rest = iso_s - uw - ow - timed - setup
    print(f"{name:16s} {len(i['units']):5d} {run_s:7.1f} {graph_s:6.1f} {iso_s:8.1f} {uw:12.1f} {ow:13.1f} "
          f"{timed:6.1f} {setup:6.1f} {rest:6.1f}")
