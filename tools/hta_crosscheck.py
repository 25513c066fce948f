#!/usr/bin/env python3
"""kc's trace analysis beside HolisticTraceAnalysis's on the same traces (issue 26).

    python3 tools/hta_crosscheck.py HTA_SOURCE KC TRACE... > crosscheck.json

HTA_SOURCE is a checkout of facebookresearch/HolisticTraceAnalysis (put on sys.path; its
requirements: pandas<3, numpy, plotly, networkx, pydot, psutil, pyyaml), KC the kc binary.
Per trace: HTA's kernel breakdown (sum, mean per kernel name, in microseconds) and temporal
breakdown (idle, compute, non-compute time per rank) against `kc analyze --json` (per kernel
name totals and counts; per rank over the whole trace: busy, idle, kernel, memcpy+memset),
with the largest per-kernel difference. HTA cuts every event to whole microseconds (start
rounded up, end rounded down), kc keeps nanoseconds: the script recomputes kc's sums under
HTA's cut from the trace, which must then agree name for name.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def hta_side(hta_src, trace):
    sys.path.insert(0, hta_src)
    from hta.trace_analysis import TraceAnalysis

    d = tempfile.mkdtemp()
    shutil.copy(trace, d)
    out = {}
    a = TraceAnalysis(trace_dir=d)
    try:
        _, kb = a.get_gpu_kernel_breakdown(visualize=False, num_kernels=100000, duration_ratio=1.0,
                                           include_memory_kernels=True)
        out["kernels"] = {r["name"]: {"sum_us": float(r["sum (us)"]),
                                      "count": round(float(r["sum (us)"]) / float(r["mean (us)"]))
                                      if float(r["mean (us)"]) > 0 else None}
                          for r in kb.to_dict("records")}
    except Exception as e:  # HTA's own failures are reported, not hidden
        out["kernels_error"] = repr(e)
    try:
        tb = a.get_temporal_breakdown(visualize=False).to_dict("records")[0]
        out["temporal"] = {k: float(v) for k, v in tb.items()}
    except Exception as e:
        out["temporal_error"] = repr(e) or "AssertionError"
    shutil.rmtree(d)
    return out


def truncated_sums(trace):
    """Per GPU activity name, the sum of durations cut to whole microseconds as HTA's parser
    cuts them (start rounded up, end rounded down: hta/common/trace_parser.py), computed
    from the trace itself: the explanation of the difference."""
    import gzip
    import math
    opener = gzip.open if trace.endswith(".gz") else open
    with opener(trace, "rt") as f:
        events = json.load(f).get("traceEvents", [])
    out = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            ts, dur = float(e["ts"]), float(e.get("dur", 0))
            out[e["name"]] = out.get(e["name"], 0) + (math.floor(ts + dur) - math.ceil(ts))
    return out


def kc_side(kc, trace):
    r = subprocess.run([kc, "analyze", trace, "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main():
    hta_src, kc = sys.argv[1], sys.argv[2]
    report = {}
    for t in sys.argv[3:]:
        h, k = hta_side(hta_src, t), kc_side(kc, t)
        row = {"kc_gpu_time_us": k["gpu_time_us"]}
        kk = {x["name"]: x for x in k["kernels"]}
        if "kernels" in h:
            common = set(kk) & set(h["kernels"])
            diffs = [(abs(kk[n]["total_us"] - h["kernels"][n]["sum_us"]), n) for n in common]
            row.update({
                "hta_kernel_names": len(h["kernels"]), "kc_kernel_names": len(kk),
                "names_in_both": len(common),
                "hta_sum_us": sum(v["sum_us"] for v in h["kernels"].values()),
                "kc_sum_us_same_names": sum(kk[n]["total_us"] for n in common),
                "largest_kernel_diff_us": max(diffs)[0] if diffs else None,
                "largest_kernel_diff_name": max(diffs)[1][:80] if diffs else None,
                "counts_equal": sum(1 for n in common if h["kernels"][n]["count"] == kk[n]["count"]),
            })
            # With every duration cut to whole microseconds, kc's sums are HTA's.
            cut = truncated_sums(t)
            row["names_equal_after_cutting_to_whole_us"] = sum(
                1 for n in common if abs(cut.get(n, -1) - h["kernels"][n]["sum_us"]) < 1e-6)
        else:
            row["hta_kernels_error"] = h.get("kernels_error")
        r0 = k["ranks"][0]
        row["kc_rank0"] = {"span_us": r0["span_us"], "busy_us": r0["busy_us"], "idle_us": r0["idle_us"],
                           "kernel_us": r0["kernel_us"], "memcpy_memset_us": r0["memcpy_us"] + r0["memset_us"],
                           "idle_pct": r0["idle_pct"]}
        row["hta_temporal"] = h.get("temporal") or h.get("temporal_error")
        if "temporal" in h and "kernels" in h:
            # HTA's idle is the span less the sum of the cut durations.
            row["kc_span_less_cut_sum_us"] = r0["span_us"] - sum(cut.values())
        report[os.path.basename(t)] = row
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
