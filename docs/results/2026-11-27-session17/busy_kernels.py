#!/usr/bin/env python3
"""Session 17, offline, as session 16's busy_kernels.py: the energy prediction with the
kernels slower in the round priced at the units' mean power instead of idle power, and with
`kc report --switch-energy-from-round`, on the 17 models of calls 2-5 (Qwen2 from call 5).
Needs `cargo build --release`. Run from the repository root:
    python3 docs/results/2026-11-27-session17/busy_kernels.py
"""
import glob, json, os, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
w = tempfile.mkdtemp()
within, count = [0, 0, 0], 0
for call in ("call2-a-kc-s", "call3-b-kc-t", "call4-c-kc-t", "call5-d-kc-t"):
    c = os.path.join(w, call)
    os.makedirs(c)
    subprocess.run(["tar", "xJf", os.path.join(here, call + ".txz"), "-C", c], check=True)
    for d in sorted(glob.glob(os.path.join(c, "*", "*.kc", "*"))):
        n, part = os.path.basename(d), os.path.dirname(os.path.dirname(d))
        if n == "qwen2_train" and call == "call4-c-kc-t":
            continue  # its reference queued too little (call 5 measured it again)
        out = os.path.join(w, "r", n)
        base = ["target/release/kc", "report", d + "/plan.graph.json", "--isolated", d + "/plan.isolated.context.json",
                "--reference", os.path.join(part, "reference.json"), "--reference-entry", n, "--json"]
        subprocess.run(base + ["-o", out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        p = json.load(open(out + "/report.json"))["prediction"]
        busy = p["plain_energy_j"] / (p["plain_us"] * 1e-6)
        e = p["predicted_energy_j"]
        for t in p["terms"]:
            if t["what"].startswith("kernels slower") and t.get("energy_j") is not None:
                e += t["us"] * 1e-6 * busy - t["energy_j"]
        alt = 100 * (e - p["target_energy_j"]) / p["target_energy_j"]
        subprocess.run(base + ["--switch-energy-from-round", "-o", out + ".round"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rnd = json.load(open(out + ".round/report.json"))["prediction"]["energy_error_pct"]
        within[0] += abs(p["energy_error_pct"]) <= 3.0
        within[1] += abs(alt) <= 3.0
        within[2] += abs(rnd) <= 3.0
        count += 1
        print("%-22s idle %+6.2f  units' power %+6.2f  round's energy %+6.2f" % (n, p["energy_error_pct"], alt, rnd))
print("energy within 3 %%: idle %d, units' power %d, round's energy %d, of %d" % (*within, count))
subprocess.run(["rm", "-rf", w])
