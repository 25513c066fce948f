"""Session 50's figures on the round's first cycle (docs/MEASUREMENTS.md), from call 4's
results as figures.py unpacked them: for Qwen3-MoE's step graph, each unit's kernels in
each launch's first cycle against all the round's cycles (their median relative difference
and the units that differ by 5 % and 20 us), and the prediction reported again with the
committed kc both ways (`kc report`, and `kc report --round-as-recorded`):

    python3 docs/results/2026-11-29-session50/figures.py /tmp/w50
    python3 docs/results/2026-11-29-session50/first_cycle.py /tmp/w50
"""
import json
import statistics
import subprocess
import sys

W = sys.argv[1]
D = f"{W}/call4-h-kc-zy/h"
NAME = "qwen3_moe_train_graph"
res = f"{D}/{NAME}.kc/{NAME}"
iso = json.load(open(f"{res}/plan.isolated.context.json"))
t = iso["isolated"]["transitions"]
print("the round's values:", t["round_timed_values"])
rows = []
for k in t["round_unit_kernels"]:
    f = k.get("first_cycle")
    if not f:
        continue
    d = f["round_as_recorded_us"] - f["kernels_us"]
    rows.append((k["unit"], f["kernels_us"], f["round_as_recorded_us"], d / f["kernels_us"] if f["kernels_us"] else 0.0, f["set"]))
print(f"{len(rows)} of {len(t['round_unit_kernels'])} units recorded in {rows and t['round_unit_kernels'][0]['first_cycle']['cycles']} first cycles; "
      f"median |all - first| / first {100 * statistics.median(abs(r[3]) for r in rows):.3f} %")
for u, first, allc, rel, s in sorted(rows, key=lambda r: -abs(r[2] - r[1]))[:4]:
    print(f"  unit {u}: first {first:.1f} us, all {allc:.1f} us ({100 * rel:+.1f} %){' set' if s else ''}")
# The default report is figures.py's; the same results as recorded are reported here.
out = f"{W}/first_cycle/recorded"
subprocess.run(["target/release/kc", "report", f"{res}/plan.graph.json", "--isolated",
                f"{res}/plan.isolated.context.json", "--reference", f"{D}/reference.json",
                "--reference-entry", NAME, "-o", out, "--json", "--round-as-recorded"],
               check=True, stdout=subprocess.DEVNULL)
for what, path in [("default", f"{W}/r/call4-h-kc-zy/h/{NAME}/report.json"), ("--round-as-recorded", f"{out}/report.json")]:
    p = json.load(open(path))["prediction"]
    print(f"{what}: prediction {p['error_pct']:+.1f} / {p['energy_error_pct']:+.1f} %")
