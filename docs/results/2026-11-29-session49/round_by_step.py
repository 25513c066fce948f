"""Session 49: the round's "kernels slower when the program cycles through every unit"
term, from an isolated pass's results, with each unit's kernels alone taken two ways: at
the step the round ran it (the results' `round_unit_kernels[].alone_busy_us` where
`alone_at_step`; kc-zw and later record every unit measured in context by step) and as its
mean over its steps (`units[].launches_verified.busy_us`, what kc-zv and earlier used for
all but the units measured with each invocation from the model's values). Per model
iteration with ITERATIONS; no GPU.

    python3 docs/results/2026-11-29-session49/round_by_step.py RESULTS.json ITERATIONS
"""
import json
import sys

d = json.load(open(sys.argv[1]))
iters = float(sys.argv[2])
units = {u["id"]: u for u in d["units"]}
t = d["isolated"]["transitions"]
at_step = mean = 0.0
n_at = 0
rows = []
for k in t["round_unit_kernels"]:
    u = units[k["unit"]]
    inv = u.get("invocations") or u.get("count") or 1
    lv = u.get("launches_verified") or {}
    r = k.get("round_busy_us", k["round_us"])
    a_step = k.get("alone_busy_us", k["alone_us"])
    a_mean = lv.get("busy_us", lv.get("kernels_us", a_step))
    at_step += (r - a_step) * inv
    mean += (r - a_mean) * inv
    n_at += bool(k.get("alone_at_step"))
    rows.append(((a_mean - a_step) * inv, k["unit"], inv, r, a_step, a_mean))
rows.sort(key=lambda x: -abs(x[0]))
print(f"{sys.argv[1]}: {len(t['round_unit_kernels'])} units, {n_at} alone at the round's step; "
      f"term at the step {at_step / iters:+.1f} us, against the mean {mean / iters:+.1f} us per iteration")
for x in rows[:5]:
    print(f"  unit {x[1]} x{x[2]}: round {x[3]:.2f}, alone at step {x[4]:.2f}, alone mean {x[5]:.2f} us "
          f"({x[0] / iters:+.1f} us per iteration)")
