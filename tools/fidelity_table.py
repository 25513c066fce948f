#!/usr/bin/env python3
"""The fidelity table of `kc exec --verify` results: per model, kernels launched vs traced,
matched by name, added by the replay; the graph replay split into in-context kernel time and
launch/gap overhead; in-context kernel time against the traced time of the same steps.

    tools/fidelity_table.py RESULTS_DIR        (MODEL.json files written by kc exec --verify)
"""
import glob, json, os, sys

print("| model | launched / traced | by name | added | replay us | in-context kernels us | overhead | traced us | in context vs traced | step median \\|err\\| |")
print("|---|---|---|---|---|---|---|---|---|---|")
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(p))
    g = (r.get("graph") or {})
    f = g.get("fidelity")
    if not f:
        continue
    replay = g["replay_us"]["mean"]
    ctx = f["in_context_kernels_us"]
    n = os.path.basename(p)[:-5]
    med = f.get("step_median_abs_error_pct")
    print(f"| {n} | {f['kernels_launched']} / {f['kernels_traced']} | {f['kernels_name_matched']} | {f['kernels_extra']} "
          f"| {replay:.1f} | {ctx:.1f} | {(replay / ctx - 1) * 100:+.1f} % | {f['aligned_traced_us']:.1f} "
          f"| {(f['aligned_in_context_us'] / f['aligned_traced_us'] - 1) * 100:+.1f} % | {med is not None and f'{med:.1f} %' or '–'} |")
