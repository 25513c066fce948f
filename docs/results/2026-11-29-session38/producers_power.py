"""The producers' term read as a change of power only, against the term as kc takes it, on
every charted answer that took it (session 38's look at Swin V2-S in TF32, whose term
overshoots). kc takes the energy of each unit after its lead-ins (the launch with them less
them alone); here the same units' energy alone is scaled by their power after their
lead-ins over their power alone, their time left as alone. Reads the reports chart.sh
keeps with W=DIR:
    W=/tmp/w38 bash docs/results/2026-11-29-session38/chart.sh
    python3 docs/results/2026-11-29-session38/producers_power.py /tmp/w38
"""
import glob
import json
import sys


def main(w):
    worse = better = 0
    for f in sorted(glob.glob(f"{w}/r/*/*/*/report.json")):
        p = json.load(open(f)).get("prediction") or {}
        l = p.get("lead_in_units")
        if not l or not l.get("taken") or not p.get("target_energy_j") or not l.get("share_of_plain_pct"):
            continue
        # The lead-ins' sums are per replay, the prediction per model iteration.
        per = (l["alone_j"] / (l["share_of_plain_pct"] / 100)) / p["plain_energy_j"]
        taken = (l["led_j"] - l["alone_j"]) / per
        power = (l["led_j"] / l["led_us"]) / (l["alone_j"] / l["alone_us"])
        power_only = l["alone_j"] * (power - 1) / per
        now = p["predicted_energy_j"] / p["target_energy_j"] - 1
        alt = (p["predicted_energy_j"] - taken + power_only) / p["target_energy_j"] - 1
        worse += abs(alt) > abs(now) + 0.0005
        better += abs(alt) < abs(now) - 0.0005
        name = "/".join(f.split("/")[-3:-1])
        print(f"{name:38s} after their lead-ins: time {100 * (l['led_us'] / l['alone_us'] - 1):+5.1f} %, "
              f"energy {100 * (l['led_j'] / l['alone_j'] - 1):+5.1f} %, power {100 * (power - 1):+5.1f} % | "
              f"prediction's energy {100 * now:+5.1f} %, power only {100 * alt:+5.1f} %")
    print(f"power only: farther from the model on {worse}, nearer on {better}")


if __name__ == "__main__":
    main(sys.argv[1])
