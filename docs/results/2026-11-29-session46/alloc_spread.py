"""Whether a unit whose graph holds a memory allocation (cuBLAS's workspace taken inside the
capture, which `kc exec` names in a note per unit) times less steadily alone than the
others: each unit's coefficient of variation over its timed launches within one pass
(`time_us.std / time_us.mean`, units of at least 20 us and five launches), over every
answer whose results session 45's chart.sh unpacks. Run after
`W=/tmp/w45 bash docs/results/2026-11-29-session45/chart.sh`:

    python3 docs/results/2026-11-29-session46/alloc_spread.py /tmp/w45"""
import json
import statistics
import sys
from pathlib import Path


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


cv = {True: [], False: []}
answers, worst, alloc_passes = 0, [], set()
for p in sorted(Path(sys.argv[1]).glob("call*/*/*.kc/*/plan.isolated.context.json")):
    d = json.loads(p.read_text())
    answers += 1
    alloc = {int(n.split()[1]) for n in d["notes"]
             if n.startswith("unit ") and "memory allocation" in n}
    for u in d["units"]:
        t = u.get("time_us")
        if not isinstance(t, dict) or not t.get("mean") or t.get("n", 0) < 5 or t["mean"] < 20:
            continue
        c = t["std"] / t["mean"]
        cv[u["id"] in alloc].append(c)
        if u["id"] in alloc:
            alloc_passes.add(p)
            worst.append((c, f"{p.parts[-5]}/{p.parent.name}", u["label"], t["mean"]))
print(f"{answers} isolated passes; units of at least 20 us alone, their launches' coefficient of variation within the pass"
      f" (a unit counted once per pass it ran in):")
for k, name in ((True, "a memory allocation in its graph"), (False, "none")):
    v = cv[k]
    print(f"  {name:33s} {len(v):5d} unit measurements: median {100 * statistics.median(v):.2f} %, "
          f"90th percentile {100 * quantile(v, 0.9):.2f} %")
print(f"those with a memory allocation ran in {len(alloc_passes)} passes")
print("the least steady with one:")
for c, where, label, mean in sorted(worst, reverse=True)[:8]:
    print(f"  {100 * c:5.2f} %  {where:45s} {label} ({mean:.1f} us)")
