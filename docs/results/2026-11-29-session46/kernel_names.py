"""Which units, measured alone, launched kernels of other names than the trace holds for them
(CUPTI, `launches_verified.names_matched` below 1), over every answer whose results session
45's chart.sh unpacks. Run after `W=/tmp/w45 bash docs/results/2026-11-29-session45/chart.sh`:

    python3 docs/results/2026-11-29-session46/kernel_names.py /tmp/w45"""
import json
import sys
from pathlib import Path

passes, rows = 0, set()
for p in sorted(Path(sys.argv[1]).glob("call*/*/*.kc/*/plan.isolated.context.json")):
    d = json.loads(p.read_text())
    passes += 1
    for u in d["units"]:
        lv = u.get("launches_verified") or {}
        matched = lv.get("names_matched")
        if u.get("status") == "ok" and matched is not None and matched < 0.999:
            t = (u.get("time_us") or {}).get("mean", 0.0)
            rows.add(f"{p.parts[-5]}/{p.parent.name}: unit {u['id']} {u['label']}, names matched "
                     f"{matched:.2f}, {t:.1f} us alone against {u.get('traced_mean_us') or 0:.1f} traced")
print(f"{passes} isolated passes; units whose kernels alone had other names than traced: {len(rows)}")
print("\n".join(sorted(rows)))
