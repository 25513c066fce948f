#!/usr/bin/env python3
"""Session 16, offline: the energy prediction if the kernels slower in the round were priced
at the units' mean power (Σ isolated energy / Σ isolated time) instead of the idle power,
and with `kc report --switch-energy-from-round` (the switches at the round's own energy), on
the 21 models; counts those within 3 %. Needs `cargo build --release` (kc report).
    python3 docs/results/2026-11-27-session16/busy_kernels.py
"""
import glob, json, os, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
w = tempfile.mkdtemp()
for t in sorted(glob.glob(os.path.join(here, "call[1-5]-*.txz"))):
    subprocess.run(["tar", "xJf", t, "-C", w], check=True)
within = [0, 0, 0]
for d in sorted(glob.glob(os.path.join(w, "*", "*.kc", "*"))):
    n, part = os.path.basename(d), d.split(os.sep)[-3]
    out = os.path.join(w, "r", n)
    subprocess.run(["target/release/kc", "report", d + "/plan.graph.json", "--isolated",
                    d + "/plan.isolated.context.json", "--reference", os.path.join(w, part, "reference.json"),
                    "--reference-entry", n, "-o", out, "--json"], check=True, stdout=subprocess.DEVNULL)
    p = json.load(open(out + "/report.json"))["prediction"]
    busy = p["plain_energy_j"] / (p["plain_us"] * 1e-6)
    e = p["predicted_energy_j"]
    for t in p["terms"]:
        if t["what"].startswith("kernels slower") and t.get("energy_j") is not None:
            e += t["us"] * 1e-6 * busy - t["energy_j"]
    alt = 100 * (e - p["target_energy_j"]) / p["target_energy_j"]
    subprocess.run(["target/release/kc", "report", d + "/plan.graph.json", "--isolated",
                    d + "/plan.isolated.context.json", "--reference", os.path.join(w, part, "reference.json"),
                    "--reference-entry", n, "--switch-energy-from-round", "-o", out + ".round", "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    rnd = json.load(open(out + ".round/report.json"))["prediction"]["energy_error_pct"]
    within[0] += abs(p["energy_error_pct"]) <= 3.0
    within[1] += abs(alt) <= 3.0
    within[2] += abs(rnd) <= 3.0
    print("%-22s idle %+6.2f  units' power %+6.2f  round's energy %+6.2f" % (n, p["energy_error_pct"], alt, rnd))
print("energy within 3 %%: idle %d of 21, units' power %d of 21, round's energy %d of 21" % tuple(within))
subprocess.run(["rm", "-rf", w])
