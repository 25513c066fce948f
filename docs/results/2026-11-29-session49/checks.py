"""Session 49's figures computed from the calls' results that no other script prints (no
GPU), after figures.py has unpacked and reported them into W:

    python3 docs/results/2026-11-29-session49/figures.py /tmp/w49
    python3 docs/results/2026-11-29-session49/checks.py /tmp/w49

1. Copies and fills each unit ran alone against the trace's (`launches_verified`), over the
   twelve isolated passes (EfficientNet-B0's kept plan, call 2, and the eleven answers).
2. The model's own energy per measurement of each entry: at capture and after kc
   (`--remeasure`), the median window of each, and how far they part.
3. Per unit recorded alone by step (call 4): the first step's kernels (busy) over the mean
   of the others, for all such units and for those whose launch runs the first step more
   than once (unroll at least twice the steps).
4. RegNetY-1.6GF's step: the units' kernels alone against the same kernels in kc's graph
   (`alone_kernels_us`, `in_context_mean_us`) and the round's kernels term (against the
   units' means), per replay; the largest by unit.
"""
import collections
import glob
import json
import statistics
import sys

W = sys.argv[1]

print("1. copies and fills alone against the trace's, per isolated pass")
agree = total = 0
for f in sorted(glob.glob(f"{W}/call2-b-kc-zv/b/effnet_zs.isolated.json")
                + glob.glob(f"{W}/call*/*/*.kc/*/plan.isolated.context.json")):
    c, differ = collections.Counter(), []
    for u in json.load(open(f))["units"]:
        lv = u.get("launches_verified") or {}
        cp = lv.get("copies_per_invocation")
        if cp is None:
            continue
        ok = abs(cp - lv.get("traced_copies_per_invocation", 0)) < 1e-9
        c["agree" if ok else "differ"] += 1
        if not ok:
            differ.append(f"unit {u['id']} {u.get('label', '')}: {cp:g} where traced "
                          f"{lv.get('traced_copies_per_invocation', 0)}")
    agree, total = agree + c["agree"], total + sum(c.values())
    print(f"  {'/'.join(f.split('/')[-4:-1]) or f}: {dict(c)} {differ}")
print(f"  all: as traced on {agree} of {total}")

print("2. the model's energy, at capture and after kc (median window, mJ)")
for f in sorted(glob.glob(f"{W}/call*/*/reference.json")):
    for n, e in json.load(open(f))["results"].items():
        g = e.get("cuda_graph", {})
        ms = [statistics.median(w) for w in [g.get("back_to_back_energy_windows_mj")]
              + [r.get("back_to_back_energy_windows_mj") for r in g.get("remeasured", [])] if w]
        if len(ms) > 1:
            print(f"  {f.split('/')[-3]} {n}: {', '.join(f'{m:.1f}' for m in ms)}: "
                  f"{100 * (max(ms) / min(ms) - 1):.1f} % apart")

print("3. the first step alone over the others (busy), units recorded by step (call 4)")
for f in sorted(glob.glob(f"{W}/call4-d-kc-zw/d/*.kc/*/plan.isolated.context.json")):
    every, recurring = [], []
    for u in json.load(open(f))["units"]:
        steps = sorted((u.get("launches_verified") or {}).get("by_step") or [], key=lambda s: s["step"])
        if len(steps) < 2:
            continue
        rest = statistics.mean(s["busy_us"] for s in steps[1:])
        if rest <= 0:
            continue
        r = steps[0]["busy_us"] / rest
        every.append(r)
        if (u.get("unroll") or 0) >= 2 * len(steps):
            recurring.append(r)
    every.sort()
    print(f"  {f.split('/')[-2]}: {len(every)} units, median {statistics.median(every):.4f} "
          f"(10th-90th percentile {every[len(every) // 10]:.3f}-{every[9 * len(every) // 10]:.3f}); "
          f"first step recurring in its launch: {len(recurring)} units, median "
          f"{statistics.median(recurring):.4f}")

print("4. RegNetY-1.6GF's step, per replay")
d = f"{W}/call2-b-kc-zv/b"
r = json.load(open(f"{W}/r/call2-b-kc-zv/b/regnety16_train/report.json"))
iso = json.load(open(f"{d}/regnety16_train.kc/regnety16_train/plan.isolated.context.json"))
units = {u["id"]: u for u in r["units"]}
excess = collections.Counter()
for u in r["units"]:
    if u.get("in_context_mean_us") is not None and u.get("alone_kernels_us") is not None:
        excess[(u["id"], u["label"])] += (u["alone_kernels_us"] - u["in_context_mean_us"]) * u["invocations"]
term = sum((k.get("round_busy_us", k["round_us"]) - k.get("alone_busy_us", k["alone_us"]))
           * units[k["unit"]]["invocations"] for k in iso["isolated"]["transitions"]["round_unit_kernels"])
bn = sum(v for (i, l), v in excess.items() if l.startswith("aten::native_batch_norm") and "backward" not in l)
print(f"  the units' kernels alone over kc's graph: {sum(excess.values()):.0f} us, the batch "
      f"norms (forward) {bn:.0f} us; the round's kernels term {term:.0f} us")
for (i, l), v in excess.most_common(4):
    print(f"    unit {i} {l}: {v:.0f} us")
