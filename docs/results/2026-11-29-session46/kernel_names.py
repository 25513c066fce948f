"""Which units, measured alone, launched kernels of other names than the trace holds for them
(CUPTI, `launches_verified.names_matched` below 1), and which launched another number of
kernels per invocation than traced, over every answer whose results session 45's chart.sh
unpacks. Run after `W=/tmp/w45 bash docs/results/2026-11-29-session45/chart.sh`:

    python3 docs/results/2026-11-29-session46/kernel_names.py /tmp/w45"""
import json
import sys
from pathlib import Path

passes, names, counts = 0, set(), set()
for p in sorted(Path(sys.argv[1]).glob("call*/*/*.kc/*/plan.isolated.context.json")):
    d = json.loads(p.read_text())
    passes += 1
    where = f"{p.parts[-5]}/{p.parent.name}"
    for u in d["units"]:
        lv = u.get("launches_verified") or {}
        if u.get("status") != "ok" or not lv:
            continue
        t = (u.get("time_us") or {}).get("mean", 0.0)
        traced = u.get("traced_mean_us") or 0.0
        matched = lv.get("names_matched")
        if matched is not None and matched < 0.999:
            names.add(f"{where}: unit {u['id']} {u['label']}, names matched {matched:.2f}, "
                      f"{t:.1f} us alone against {traced:.1f} traced")
        launched, held = lv.get("launched_per_invocation"), lv.get("traced_per_invocation")
        if launched is not None and held is not None and abs(launched - held) > 0.01:
            counts.add(f"{where}: unit {u['id']} {u['label']} x{u['invocations']}, {launched:g} "
                       f"kernels an invocation against {held} traced, {t:.1f} us alone against "
                       f"{traced:.1f} traced")
print(f"{passes} isolated passes; units whose kernels alone had other names than traced: {len(names)}")
print("\n".join(sorted(names)))
print(f"units that launched another number of kernels an invocation alone than traced: {len(counts)}")
print("\n".join(sorted(counts)))
