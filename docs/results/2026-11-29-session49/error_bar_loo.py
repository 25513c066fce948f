"""Session 49: would the prediction's error bar cover the model if it held the method's own
spread? Over the chart's answers (reports chart.sh regenerated: W=DIR bash chart.sh), each
model's prediction error is set against (a) its stated bar, ± 2u from the repeats within
its run, and (b) that bar widened by the method's spread estimated leave-one-out from the
other answers' errors (1.4826 × the median |error| of the others, a robust s.d., never from
the model itself): u' = sqrt(u² + (s × predicted)²). No GPU.

    python3 docs/results/2026-11-29-session49/error_bar_loo.py /tmp/w49
"""
import glob
import json
import statistics
import sys

answers = []
for f in sorted(glob.glob(f"{sys.argv[1]}/r/*/*/*/report.json")):
    p = json.load(open(f)).get("prediction")
    if not p or p.get("target_us") is None:
        continue
    a = {"name": "/".join(f.split("/")[-4:-1])}
    for k, pred, u, tgt, tu in (("time", "predicted_us", "predicted_u_us", "target_us", "target_u_us"),
                                ("energy", "predicted_energy_j", "predicted_energy_u_j", "target_energy_j",
                                 "target_energy_u_j")):
        if p.get(pred) and p.get(tgt):
            a[k] = (p[pred], p.get(u) or 0.0, p[tgt], p.get(tu) or 0.0)
    answers.append(a)


def covered(k, widen):
    inside = n = 0
    spreads = []
    for a in answers:
        if k not in a:
            continue
        pred, u, tgt, tu = a[k]
        s = 0.0
        if widen:
            others = [abs(b[k][0] / b[k][2] - 1.0) for b in answers if b is not a and k in b]
            s = 1.4826 * statistics.median(others)
            spreads.append(s)
        uu = (u * u + tu * tu + (s * pred) ** 2) ** 0.5
        n += 1
        inside += abs(pred - tgt) <= 2.0 * uu
    return inside, n, spreads


def median_z(k):
    """The median of |error| over the bar's combined standard uncertainty (0.67 where the
    bar holds the errors as a normal spread)."""
    z = [abs(a[k][0] - a[k][2]) / (a[k][1] ** 2 + a[k][3] ** 2) ** 0.5
         for a in answers if k in a and (a[k][1] or a[k][3])]
    return statistics.median(z)


for k in ("time", "energy"):
    print(f"{k}: median |error| / u {median_z(k):.2f}")
    i0, n, _ = covered(k, False)
    i1, _, s = covered(k, True)
    print(f"{k}: the model within the stated ± 2u on {i0} of {n}; with the method's spread "
          f"(leave-one-out, {100 * min(s):.2f}-{100 * max(s):.2f} % as one s.d.) within ± 2u on {i1} of {n}")
