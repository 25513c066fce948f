"""The price of the time the prediction's terms add (gaps at switches, slower kernels,
launches): kc takes it at the idle power; its energy error bar holds a rectangular spread
up to the units' own mean power (`energy_pricing_u_j` = their difference × that time /
√12). Here each charted answer's energy error at the idle price, at the midpoint and at
the units' own power, and how many lie within 3 % at each. Reads the reports chart.sh
keeps with W=DIR:
    W=/tmp/w38 bash docs/results/2026-11-29-session38/chart.sh
    python3 docs/results/2026-11-29-session38/pricing.py /tmp/w38
"""
import glob
import json
import math
import sys


def main(w):
    rows = []
    for f in sorted(glob.glob(f"{w}/r/*/*/*/report.json")):
        p = json.load(open(f)).get("prediction") or {}
        if not p.get("target_energy_j") or p.get("predicted_energy_j") is None:
            continue
        u = p.get("energy_pricing_u_j")
        at = lambda k: (p["predicted_energy_j"] + k * u) / p["target_energy_j"] - 1 if u else None  # noqa: E731
        rows.append(("/".join(f.split("/")[-3:-1]), at(0) if u else p["predicted_energy_j"] / p["target_energy_j"] - 1,
                     at(math.sqrt(3)), at(math.sqrt(12))))
    pct = lambda x: "-" if x is None else f"{100 * x:+5.1f} %"  # noqa: E731
    for name, idle, mid, own in rows:
        print(f"{name:36s} idle {pct(idle)}  midpoint {pct(mid)}  units' power {pct(own)}")
    within = lambda i: sum(r[i] is not None and abs(r[i]) <= 0.03 for r in rows)  # noqa: E731
    print(f"within 3 % of {len(rows)}: idle {within(1)}, midpoint {within(2)}, units' power {within(3)}")


if __name__ == "__main__":
    main(sys.argv[1])
