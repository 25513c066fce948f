"""How far the plain sum moves between isolated passes on the same plan in the same call,
against the uncertainty each pass states for it (two standard uncertainties from its own
repeats). Every pass of session 46 measured every unit alone again (time only, its own
process); reads the reports summary.py wrote. Run after summary.py:

    python3 docs/results/2026-11-29-session46/repeatability.py /tmp/w46"""
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

work = Path(sys.argv[1])
plain = defaultdict(list)
for md in sorted((work / "reports").glob("*/*/report.md")):
    m = re.search(r"^\| Σ isolated × count \(plain\) \| ([\d.]+) ± ([\d.]+) us", md.read_text(), re.M)
    if m:
        call, model = md.parts[-3], md.parent.name.rsplit(".", 1)[0]
        plain[(call[:5], model)].append((float(m.group(1)), float(m.group(2))))
print("call  model                  passes  plain sum: mean, between passes' s.d.  | stated s.d. (± / 2), mean | ratio")
for (call, model), v in sorted(plain.items()):
    if len(v) < 3:
        continue
    xs = [x for x, _ in v]
    sd = statistics.stdev(xs)
    stated = statistics.mean(u / 2 for _, u in v)
    print(f"{call} {model:22s} {len(v):6d}  {statistics.mean(xs):9.1f} us, {sd:6.1f} us ({100 * sd / statistics.mean(xs):.2f} %)"
          f" | {stated:6.1f} us | {sd / stated:4.1f}")

# Which units move between passes: each unit's time alone × its invocations per iteration
# over BLOOM's call-1 passes (the bisection's eleven, the default's and the bound one's).
part = work / "call1-a-kc-zp" / "a"
files = [part / "bloom_train_graph.kc/bloom_train_graph/plan.isolated.context.json",
         part / "bloom_train_graph.bound.json"] + sorted((part / "bisect_bloom").glob("lead.*.json"))
per = defaultdict(list)
for f in files:
    d = json.loads(f.read_text())
    for u in d["units"]:
        if u.get("predicted_us") is not None:
            # The unit's share of the plain sum, per model iteration (3 per replay).
            per[(u["id"], u["label"])].append(u["predicted_us"] / 3)
rows = sorted(((statistics.stdev(v), statistics.mean(v), k) for k, v in per.items() if len(v) == len(files)),
              reverse=True)
total = sum(s * s for s, _, _ in rows) ** 0.5
print(f"\nBLOOM, call 1, {len(files)} passes: units' between-pass s.d. in quadrature {total:.1f} us an iteration; the largest:")
for s, m, (i, label) in rows[:8]:
    print(f"  unit {i:3d} {label:40s} {m:8.1f} us an iteration, s.d. {s:5.1f} us ({100 * s / m:.2f} %)")
