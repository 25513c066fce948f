"""Session 39's figures, from the reports chart.sh keeps with W=DIR:
    W=/tmp/w39 bash docs/results/2026-11-29-session39/chart.sh
    python3 docs/results/2026-11-29-session39/figures.py /tmp/w39

1. What the units' launches after their lead-ins are made of (`--lead-in-kernels`, calls 3
   and 4): the report's `lead_in_units.kernels`, per replay.
2. The producers' term read other ways, on every charted answer that takes it, against the
   model's energy: as kc takes it (`led_j − alone_j − round_kernels_j`); the launches'
   time beyond alone taken out at the idle power in place of the round's kernels on them
   (only where longer, or signed); as a change of power only (session 38's reading); the
   term left out; the launches' time beyond alone taken out at their own power. The sums
   are per replay, as the prediction's are.
"""
import glob
import json
import os
import sys


def decomposition(w):
    print("1. The units after their lead-ins, recorded with CUPTI (per replay, us)")
    for f in sorted(glob.glob(f"{w}/r/call[34]-*-kc-za/*/*/report.json")):
        l = ((json.load(open(f)).get("prediction") or {}).get("lead_in_units") or {})
        k = l.get("kernels")
        if not k:
            continue
        name = f.split("/")[-2]
        print(f"  {name:20s} {k['units']:3d} units: difference {k['led_us']:8.1f} against alone {k['alone_us']:8.1f} "
              f"({100 * (k['led_us'] / k['alone_us'] - 1):+.1f} %); own kernels {k['unit_kernels_us']:8.1f} against "
              f"{k['alone_kernels_us']:8.1f} ({100 * (k['unit_kernels_us'] / k['alone_kernels_us'] - 1):+.1f} %); "
              f"lead-ins' kernels {k['lead_ins_kernels_beyond_alone_us']:+7.1f}, gaps {k['gaps_beyond_alone_us']:+7.1f}")


def results_of(w, report):
    call, part, name = report.split("/")[-4:-1]
    base = name.replace(".again", "")
    kc = f"{base}.again.kc" if name.endswith(".again") else f"{base}.kc"
    path = f"{w}/{call}/{part}/{kc}/{base}/plan.isolated.context.json"
    return json.load(open(path)) if os.path.exists(path) else None


def readings(w):
    print("2. The producers' term read other ways: the prediction's energy against the model's")
    names = ["as taken", "longer@idle", "signed@idle", "power only", "left out", "longer@own"]
    rows = []
    for f in sorted(glob.glob(f"{w}/r/*/*/*/report.json")):
        p = json.load(open(f)).get("prediction") or {}
        l = p.get("lead_in_units")
        if not l or not l.get("taken") or not p.get("target_energy_j"):
            continue
        res = results_of(w, f)
        if res is None or not res.get("idle"):
            continue
        idle_w = res["idle"]["avg_power_w"]
        s = dict(led_j=0.0, alone_j=0.0, longer_us=0.0, signed_us=0.0, led_us=0.0, alone_us=0.0, longer_own_j=0.0)
        # The units the report takes: measured in energy, no window held down by the cap.
        for u in res["units"]:
            a = u.get("after_lead_in")
            if not a or a.get("energy_j") is None or a.get("capped_windows", 0) > 0 or not u.get("energy"):
                continue
            n, t = u["invocations"], u["time_us"]["mean"]
            d = a["time_us"] - t
            s["led_j"] += n * a["energy_j"]
            s["alone_j"] += n * u["energy"]["per_item_j"]["mean"]
            s["longer_us"] += n * max(d, 0.0)
            s["signed_us"] += n * d
            s["led_us"] += n * a["time_us"]
            s["alone_us"] += n * t
            if a["time_us"] > 0:
                s["longer_own_j"] += n * a["energy_j"] * max(d, 0.0) / a["time_us"]
        if abs(s["led_j"] - l["led_j"]) > 1e-6 * max(1.0, s["led_j"]):
            continue
        e, target = p["predicted_energy_j"], p["target_energy_j"]
        rest = e - (l["led_j"] - l["alone_j"] - l["round_kernels_j"])
        diff = s["led_j"] - s["alone_j"]
        power = s["alone_j"] * ((s["led_j"] / s["led_us"]) / (s["alone_j"] / s["alone_us"]) - 1)
        alt = [e, rest + diff - s["longer_us"] * 1e-6 * idle_w, rest + diff - s["signed_us"] * 1e-6 * idle_w,
               rest + power, rest, rest + diff - s["longer_own_j"]]
        rows.append(("/".join(f.split("/")[-3:-1]), [x / target - 1 for x in alt]))
    print(f"  {'answer':38s}" + "".join(f"{n:>13s}" for n in names))
    for name, v in rows:
        print(f"  {name:38s}" + "".join(f"{100 * x:+12.1f}%" for x in v))
    for i, n in enumerate(names):
        within = sum(abs(v[i]) <= 0.03 for _, v in rows)
        mean = 100 * sum(abs(v[i]) for _, v in rows) / len(rows)
        print(f"  {n:12s} within 3 %: {within} of {len(rows)}, mean |error| {mean:.2f} %")


if __name__ == "__main__":
    decomposition(sys.argv[1])
    readings(sys.argv[1])
