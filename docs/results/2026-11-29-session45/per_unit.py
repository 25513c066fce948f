"""Deliverable 3 over the H200 chart's answers: each unit measured after its lead-ins
(`--lead-in-kernels`), alone, and in the round, against the same unit's kernels in kc's
graph (CUPTI), per answer the median |error| over its units, then the median of those
medians and how many answers lie within 3 %. Reads the reports chart.sh regenerated:

    W=/tmp/w45 bash docs/results/2026-11-29-session45/chart.sh
    python3 docs/results/2026-11-29-session45/per_unit.py /tmp/w45/r

Answers whose report says its kernels lined up with the trace's only in part (the per-unit
figures are then no measurement) are left out and named."""
import csv
import json
import statistics
import sys
from pathlib import Path


def col(rows, name):
    return [abs(float(r[name])) for r in rows if r.get(name) not in (None, "")]


def main(root):
    per = {"after": [], "same alone": [], "every alone": [], "round": []}
    left_out, answers = [], 0
    for rep in sorted(Path(root).glob("*/*/*/report.json")):
        t = json.loads(rep.read_text())["time"]
        if not t.get("units_after_lead_in_vs_in_context"):
            continue
        name = "/".join(rep.parts[-4:-1])
        if t.get("in_context_alignment_caveat"):
            left_out.append(name)
            continue
        rows = list(csv.DictReader(open(rep.parent / "units.csv")))
        led = [r for r in rows if r.get("after_lead_in_vs_in_context_pct") not in (None, "")]
        answers += 1
        per["after"].append(statistics.median(col(led, "after_lead_in_vs_in_context_pct")))
        same = col(led, "isolated_vs_in_context_pct")
        if same:
            per["same alone"].append(statistics.median(same))
        per["every alone"].append(statistics.median(col(rows, "isolated_vs_in_context_pct")))
        per["round"].append(statistics.median(col(rows, "round_vs_in_context_pct")))
    print(f"{answers} answers with units measured after their lead-ins")
    for k, v in per.items():
        print(f"  {k:12s} median of medians {statistics.median(v):.1f} %, within 3 % on {sum(x <= 3 for x in v)} of {len(v)}")
    if left_out:
        print(f"left out, their kernels lined up with the trace's only in part: {', '.join(left_out)}")


if __name__ == "__main__":
    main(sys.argv[1])
