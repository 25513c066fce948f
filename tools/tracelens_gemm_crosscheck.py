#!/usr/bin/env python3
"""kc's GEMM FLOPs beside TraceLens's on the same traces (issue 26).

    python3 tools/tracelens_gemm_crosscheck.py TRACELENS_SOURCE KC TRACE...

TRACELENS_SOURCE is a checkout of AMD-AGI/TraceLens (put on sys.path; it needs pandas,
tqdm, openpyxl, tabulate, orjson, pyyaml). Per trace: TraceLens's perf model GFLOPS of every
aten::mm / addmm / bmm / baddbmm / matmul / linear launcher, summed, and the multiset of
per-call FLOPs; kc's FLOPs of the GEMM rows of `kc analyze --json`'s roofline (recovered M,
N, K and batch, 2 FLOPs per multiply-add), summed. Prints one JSON object per trace.
"""
import json
import subprocess
import sys

GEMM_OPS = ["aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"]


def tracelens_flops(src, trace):
    import contextlib
    sys.path.insert(0, src)
    from TraceLens.TreePerf.tree_perf import TreePerfAnalyzer

    # TraceLens prints its progress on stdout: kept off the JSON this script prints.
    with contextlib.redirect_stdout(sys.stderr):
        return _tracelens_flops(TreePerfAnalyzer, trace)


def _tracelens_flops(TreePerfAnalyzer, trace):
    a = TreePerfAnalyzer.from_file(trace)
    df = a.get_df_kernel_launchers()
    g = df[df["name"].isin(GEMM_OPS)]
    pm = a.build_df_perf_metrics([a.tree.get_UID2event(u) for u in g["UID"]])
    return [float(x) * 1e9 for x in pm["GFLOPS"].dropna()]


def main():
    src, kc = sys.argv[1], sys.argv[2]
    out = {}
    for t in sys.argv[3:]:
        tl = tracelens_flops(src, t)
        a = json.loads(subprocess.run([kc, "analyze", t, "--json"], capture_output=True, text=True,
                                      check=True).stdout)
        kc_flops = sum(r["flops"] for r in a["roofline"]["rows"] if r["family"] == "gemm")
        tl_sum = sum(tl)
        out[t.split("/")[-1]] = {
            "tracelens_gemm_calls": len(tl), "tracelens_gemm_flops": tl_sum,
            "kc_gemm_flops": kc_flops,
            "difference_pct": 100.0 * (kc_flops - tl_sum) / tl_sum if tl_sum else None,
        }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
