"""Session 38's figures from its raw results: each `kc run`'s wall and phases, and the
EfficientNet-V2-S A/B (default against `--one-window-spread 0`, same capture, same call)
on the units after their lead-ins and the units alone, split by whether the default
measured them over one window. Run from the repository root:
    python3 docs/results/2026-11-29-session38/figures.py
"""
import datetime
import json
import os
import statistics
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CALLS = ["call1-a-kc-x", "call2-c-kc-x"]


def when(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


def units(d, run, name):
    with open(os.path.join(d, run, name, "plan.isolated.context.json")) as f:
        return {u["id"]: u for u in json.load(f)["units"]}


def main():
    w = tempfile.mkdtemp()
    for c in CALLS:
        with tarfile.open(os.path.join(HERE, c + ".txz")) as t:
            t.extractall(os.path.join(w, c), filter="data")
    print("model | kc run | graph phase | units alone | lead-ins")
    for c in CALLS:
        for part in os.listdir(os.path.join(w, c)):
            d = os.path.join(w, c, part)
            walls = {}
            for line in open(os.path.join(d, "summary.txt")):
                if " rc=" in line and line.rstrip().endswith(" ms"):
                    key = line.split(" rc=")[0]
                    walls[key] = float(line.split()[-2]) / 1000
            for run in sorted(x for x in os.listdir(d) if x.endswith(".kc")):
                name = run[: -len(".kc")].replace(".again", "")
                key = name + (" again" if ".again" in run else "")
                g = json.load(open(os.path.join(d, run, name, "plan.graph.json")))
                i = json.load(open(os.path.join(d, run, name, "plan.isolated.context.json")))
                ph = {p["phase"]: p["seconds"] for p in i["isolated"]["phases"]}
                graph_s = (when(g["finished"]) - when(g["started"])).total_seconds()
                print(f"{key} | {walls.get(key, float('nan')):.1f} s | {graph_s:.1f} s | "
                      f"{ph.get('the units alone', 0):.1f} s | {ph.get('the units after their lead-ins', 0):.1f} s")
    d = os.path.join(w, "call1-a-kc-x", "a")
    a = units(d, "effnet_v2_s.kc", "effnet_v2_s")
    b = units(d, "effnet_v2_s.again.kc", "effnet_v2_s")
    ok = [u for u in a.values() if u["status"] == "ok"]
    traced = sum(u["traced_mean_us"] * u["invocations"] for u in ok)
    lead = {True: [], False: []}
    alone = {True: [], False: []}
    for u in ok:
        v = b[u["id"]]
        share = u["traced_mean_us"] * u["invocations"] / traced
        one = 0.005 / share ** 0.5 >= 0.03
        n = u["invocations"]
        ea, eb = u.get("energy"), v.get("energy")
        if ea and eb:
            alone[one].append((ea["per_item_j"]["mean"] * n, eb["per_item_j"]["mean"] * n))
        la, lb = u.get("after_lead_in"), v.get("after_lead_in")
        if (la and lb and la.get("energy_j") is not None and lb.get("energy_j") is not None
                and not la["capped_windows"] and not lb["capped_windows"]):
            lead[one].append((la["energy_j"] * n, lb["energy_j"] * n))
    print("\nEfficientNet-V2-S, default against --one-window-spread 0 (J per replay, both taken)")
    for what, rows in (("after their lead-ins", lead), ("alone", alone)):
        for one in (True, False):
            r = rows[one]
            sa, sb = sum(x for x, _ in r), sum(y for _, y in r)
            med = statistics.median(x / y - 1 for x, y in r) if r else float("nan")
            print(f"  {what}, {'one window by default' if one else 'two or more in both'}: "
                  f"{len(r)} units, {sa:.4f} against {sb:.4f} J ({100 * (sa / sb - 1):+.2f} %), "
                  f"median per unit {100 * med:+.2f} %")


if __name__ == "__main__":
    main()
