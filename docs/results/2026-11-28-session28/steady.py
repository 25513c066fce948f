#!/usr/bin/env python3
"""Not adopted (session 28, no GPU): each unit's kernels alone taken as no longer than its
event-timed invocation, over every kept answer of sessions 17-28 (context cache, against
the model in the same call, no caveat on the target), each answered again by the committed
kc. A unit's kernels alone come from one CUPTI-recorded launch; on some units it ran
longer than the unit's timed invocations, which a steady launch cannot (GPT-2's LM-head
GEMM 3 333 us recorded against 3 275 us timed, session 28's call 3). Here such a record is
clamped to the timed invocation, in the units' records and the round's per-unit
comparison, and the round's gap per switch is taken again from the round's cycle, its
recorded kernels and the units' gaps alone so changed: what a steady record would give if
the excess were all the record's.
Run from the repository root after `cargo build --release`:
    python3 docs/results/2026-11-28-session28/steady.py > docs/results/2026-11-28-session28/steady.txt
"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, f"{HERE}/../2026-11-27-session26")
from capped import answers, KC  # noqa: E402


def clamp(I):
    """The isolated results with every unit's record clamped; the excess clamped off per
    replay (us, Σ × invocations), or None where nothing changed."""
    units = {u["id"]: u for u in I["units"]}
    delta = {}
    for u in I["units"]:
        lv, t = u.get("launches_verified"), (u.get("time_us") or {}).get("mean")
        if lv and lv.get("kernels_us") is not None and t is not None and lv["kernels_us"] > t:
            delta[u["id"]] = lv["kernels_us"] - t
            lv["kernels_us"] = t
    if not delta:
        return None
    tr = (I.get("isolated") or {}).get("transitions") or {}
    rk = tr.get("round_unit_kernels") or []
    for r in rk:
        if r["unit"] in delta:
            r["alone_us"] = units[r["unit"]]["time_us"]["mean"]
    g, sw = tr.get("round_gap_extra_us"), tr.get("round_switches") or 0
    if g is not None and sw and tr.get("round_cycle_us") is not None and tr.get("round_kernels_us") is not None:
        # The units' gaps alone grow by what their records lose, so the round's gap
        # per switch falls by that over the switches of one cycle.
        grown = sum(delta.get(r["unit"], 0.0) for r in rk)
        tr["round_gap_extra_us"] = g - grown / sw
    return sum(d * units[i]["invocations"] for i, d in delta.items())


def main():
    rows = []
    for call, model, rep, I in answers(last=28):
        p = rep["prediction"]
        if p.get("target_caveat") or p.get("error_pct") is None:
            continue
        excess = clamp(I)
        if excess is None:
            rows.append((call, model, 0.0, p["error_pct"], p["error_pct"], p["energy_error_pct"], p["energy_error_pct"]))
            continue
        graph, ref, entry = rep["_run"]
        d = os.path.join("/tmp", f"kc-steady-{os.getpid()}")
        os.makedirs(d, exist_ok=True)
        iso = f"{d}/isolated.json"
        json.dump(I, open(iso, "w"))
        q = subprocess.run([KC, "report", graph, "--isolated", iso, "--reference", ref,
                            "--reference-entry", entry, "-o", f"{d}/r", "--json"],
                           capture_output=True, text=True)
        if q.returncode != 0:
            print("failed:", call, model, q.stderr[:200], file=sys.stderr)
            continue
        p2 = json.load(open(f"{d}/r/report.json"))["prediction"]
        rows.append((call, model, excess, p["error_pct"], p2["error_pct"], p["energy_error_pct"], p2["energy_error_pct"]))

    print("Kept answers: the prediction's error against the model (%), as kc prices it and with every")
    print("unit's kernels alone clamped to its timed invocation (the excess: us per replay over the units)")
    print("| call | model | excess us | time as priced | time clamped | energy as priced | energy clamped |")
    print("|---|---|---|---|---|---|---|")
    for c, m, x, a, b, e, f in rows:
        if x > 0:
            print(f"| {c} | {m} | {x:.1f} | {a:+.1f} | {b:+.1f} | {e:+.1f} | {f:+.1f} |")
    n = len(rows)
    within = lambda i, lim: sum(abs(r[i]) <= lim for r in rows)
    mean = lambda i: sum(abs(r[i]) for r in rows) / max(n, 1)
    changed = sum(r[2] > 0 for r in rows)
    print(f"\n{n} answers ({changed} with a record longer than its timed invocation):")
    print(f"time within 2 %: {within(3, 2.0)} as priced, {within(4, 2.0)} clamped; mean |error| {mean(3):.2f} against {mean(4):.2f} %")
    print(f"energy within 3 %: {within(5, 3.0)} as priced, {within(6, 3.0)} clamped; mean |error| {mean(5):.2f} against {mean(6):.2f} %")


if __name__ == "__main__":
    main()
