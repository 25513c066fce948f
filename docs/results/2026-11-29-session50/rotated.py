"""Session 50, for the next call (run.sh part k): each unit's record alone by step (CUPTI,
busy time) from its launch as measured, and again from a launch of the same steps starting
at its second (`kc exec --by-step-rotated`), so that every step runs at another place of
its launch. For the round's step of each unit (its first, which its launch runs first):
its record at the head of the launch, and rotated (at its end); the median of their ratio
over the units, and the units where they part by 5 % and 1 us. A step whose record follows
its place is slowed by the launch's first place, not by its data.

    python3 docs/results/2026-11-29-session50/rotated.py RESULTS.json [...]
"""
import json
import statistics
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    ratios, apart = [], []
    for u in d.get("units", []):
        lv = u.get("launches_verified") or {}
        by, rot = lv.get("by_step") or [], lv.get("by_step_rotated") or []
        if not by or not rot:
            continue
        head = by[0]  # the launch's first place: the unit's first step, the round's
        at = {s["step"]: s for s in rot}.get(head["step"])
        if not at or not at["busy_us"]:
            continue
        others = [s["busy_us"] for s in by[1:]]
        r = head["busy_us"] / at["busy_us"]
        ratios.append(r)
        if abs(head["busy_us"] - at["busy_us"]) >= max(0.05 * at["busy_us"], 1.0):
            apart.append((u["id"], u.get("label"), head["step"], head["busy_us"], at["busy_us"],
                          min(others) if others else None, max(others) if others else None))
    print(f"{path}: {len(ratios)} units; the first step at the head of its launch over the same step "
          f"rotated, median {statistics.median(ratios):.4f}" if ratios else f"{path}: no unit recorded both ways")
    for a in sorted(apart, key=lambda a: -abs(a[3] - a[4]))[:12]:
        print(f"  unit {a[0]} {a[1]} step {a[2]}: at the head {a[3]:.2f} us, rotated {a[4]:.2f} us; "
              f"its other steps at the head's launch {a[5]:.2f}-{a[6]:.2f} us" if a[5] is not None else
              f"  unit {a[0]} {a[1]} step {a[2]}: at the head {a[3]:.2f} us, rotated {a[4]:.2f} us")
