#!/usr/bin/env python3
"""One chart of kc's answer across models: for each model, the plain sum (Σ isolated × count)
and kc's prediction from parts, as errors against the model's own measurement, in time and
in energy, with the prediction's ± 2 standard uncertainties and the targets' bands
(± 2 % time, ± 3 % energy). A model whose report says kc's own graph replay missed the
model beyond the targets (`prediction.replay_caveat`, since session 31) is marked † beside
its name: where the prediction misses the model there, the miss is the replay's, not the
sum's. A model whose own CUDA graph did not compute what its eager step does (capture.py's
replay check, said in `prediction.target_caveat` since session 49) is marked ‡: its target
may not be the model's. Reads kc's report.json files; writes an SVG.

    python3 tools/prediction_chart.py [--device H200] OUT.svg NAME=REPORT.json [NAME=REPORT.json ...]
"""
import json
import sys
from xml.sax.saxutils import escape

# What kc report's target caveat says where the model's graph failed its replay check.
OFF_EAGER = "did not compute what the model's eager step does"


def main():
    args, device = sys.argv[1:], "H100"
    if args[:1] == ["--device"] and len(args) > 1:
        device, args = args[1], args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    out, rows = args[0], []
    for arg in args[1:]:
        name, _, path = arg.partition("=")
        p = json.load(open(path))["prediction"]
        if p.get("error_pct") is None:
            sys.exit(f"{path}: the report has no prediction against a target")
        u = 200.0 * p["predicted_u_us"] / p["target_us"]
        ue = (200.0 * p["predicted_energy_u_j"] / p["target_energy_j"]
              if p.get("predicted_energy_u_j") and p.get("target_energy_j") else None)
        if p.get("replay_caveat"):
            name += " †"
        if OFF_EAGER in (p.get("target_caveat") or ""):
            name += " ‡"
        rows.append((name, p["plain_error_pct"], p["error_pct"], u,
                     p.get("plain_energy_error_pct"), p.get("energy_error_pct"), ue))
    lim = 20.0
    left, panel, gap, row_h = 230, 330, 40, 24
    dagger = any("†" in r[0] for r in rows)
    off_eager = any(r[0].endswith("‡") for r in rows)
    top = 56 + 12 * (dagger + off_eager)
    width = left + 2 * panel + gap + 20
    height = top + row_h * len(rows) + 50
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{left}" y="18" font-size="14" font-weight="bold">kc\'s answer per model '
         f'({escape(device)}): error against the model\'s own CUDA graph</text>',
         f'<text x="{left}" y="36" fill="#555">open: plain Σ isolated × count; filled: prediction from '
         f'parts (± 2 u); shaded: ± 2 % time, ± 3 % energy; clipped at ± {lim:.0f} %'
         f'{"; * never seen by kc before" if any(r[0].endswith("*") for r in rows) else ""}</text>']
    if dagger:
        s.append(f'<text x="{left}" y="50" fill="#555">†: kc\'s own graph replay misses the model beyond '
                 f'the targets (where the prediction misses the model there, the miss is the replay\'s)</text>')
    if off_eager:
        s.append(f'<text x="{left}" y="{50 + 12 * dagger}" fill="#555">‡: the model\'s own CUDA graph did not '
                 f'compute what its eager step does (capture.py\'s replay check): its target may not be the model\'s</text>')

    def x_of(x0, v):
        v = max(-lim, min(lim, v))
        return x0 + panel / 2 + v / lim * panel / 2

    for k, (title, band) in enumerate([("time", 2.0), ("energy", 3.0)]):
        x0 = left + k * (panel + gap)
        y1 = top + row_h * len(rows)
        s.append(f'<rect x="{x_of(x0, -band):.1f}" y="{top - 6}" width="{x_of(x0, band) - x_of(x0, -band):.1f}" '
                 f'height="{y1 - top + 6}" fill="#dfe9f5"/>')
        for t in (-lim, -10, 0, 10, lim):
            x = x_of(x0, t)
            s.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{y1}" stroke="#bbb" '
                     f'stroke-dasharray="{"" if t == 0 else "2,3"}"/>')
            s.append(f'<text x="{x:.1f}" y="{y1 + 16}" text-anchor="middle" fill="#555">{t:+.0f} %</text>')
        s.append(f'<text x="{x0 + panel / 2:.1f}" y="{y1 + 34}" text-anchor="middle">{title}</text>')
        for i, r in enumerate(rows):
            y = top + row_h * i + row_h / 2
            plain, pred, u = (r[1], r[2], r[3]) if k == 0 else (r[4], r[5], r[6])
            if pred is None:
                continue
            if u:
                s.append(f'<line x1="{x_of(x0, pred - u):.1f}" y1="{y:.1f}" x2="{x_of(x0, pred + u):.1f}" '
                         f'y2="{y:.1f}" stroke="#1f4e8c" stroke-width="2"/>')
            if plain is not None:
                s.append(f'<circle cx="{x_of(x0, plain):.1f}" cy="{y:.1f}" r="4.5" fill="white" '
                         f'stroke="#c0392b" stroke-width="1.5"><title>plain {plain:+.1f} %</title></circle>')
            s.append(f'<circle cx="{x_of(x0, pred):.1f}" cy="{y:.1f}" r="4.5" fill="#1f4e8c">'
                     f'<title>prediction {pred:+.1f} %</title></circle>')
            s.append(f'<text x="{x0 + panel - 2:.1f}" y="{y + 4:.1f}" text-anchor="end" fill="#1f4e8c" '
                     f'font-size="10">{pred:+.1f}</text>')
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2 + 4
        s.append(f'<text x="{left - 8}" y="{y:.1f}" text-anchor="end">{escape(r[0])}</text>')
    s.append("</svg>")
    open(out, "w").write("\n".join(s) + "\n")


if __name__ == "__main__":
    main()
