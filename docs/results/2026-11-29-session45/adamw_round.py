"""Each fused optimizer step's kernels in the round against alone (CUPTI, per invocation),
over every answer whose results chart.sh unpacks: which training steps' rounds run their
optimizer slower than alone. Where the round's values set a unit alone, its kernels in the
round as recorded are shown. Run after
`W=/tmp/w45 bash docs/results/2026-11-29-session45/chart.sh`:

    python3 docs/results/2026-11-29-session45/adamw_round.py /tmp/w45"""
import json
import sys
from pathlib import Path

rows = set()
for p in Path(sys.argv[1]).glob("call*/*/*.kc/*/plan.isolated.context.json"):
    d = json.loads(p.read_text())
    t = (d.get("isolated") or {}).get("transitions") or {}
    label = {u["id"]: u["label"] for u in d["units"]}
    for k in t.get("round_unit_kernels", []):
        if "_fused_adam" not in label[k["unit"]]:
            continue
        v = k.get("values") or {}
        r = v["round_as_recorded_us"] if v.get("set") else k["round_us"]
        rows.add(f"{p.parent.name:24s} {p.parts[-5]:16s} {label[k['unit']]:22s} round {r:9.1f} us,"
                 f" alone {k['alone_us']:9.1f} us, {100 * (r / k['alone_us'] - 1):+6.1f} %,"
                 f" {t.get('round_lead_ins')} lead-ins")
print("\n".join(sorted(rows)))
