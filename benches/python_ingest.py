"""Issue 16's benchmark: kc.ingest + Graph.kernels() on a large trace, and, when
HolisticTraceAnalysis is importable, HTA loading the same file into its DataFrame.

    python benches/python_ingest.py /tmp/big.json [--hta]

Make the 510 MB input with ../shared/tools/scale_trace.py (see benches/ingest_big.sh).
Run each side in its own process (peak RSS is per process): once without --hta, once with.
"""
import os
import resource
import sys
import tempfile
import time


def main():
    path = sys.argv[1]
    if "--hta" in sys.argv:
        from hta.trace_analysis import TraceAnalysis

        d = tempfile.mkdtemp()
        os.symlink(os.path.abspath(path), os.path.join(d, "rank0.json"))
        t = time.time()
        df = TraceAnalysis(trace_dir=d).t.get_trace(0)
        what, rows = "HTA TraceAnalysis + get_trace(0)", len(df)
    else:
        import kc

        t = time.time()
        df = kc.ingest(path).kernels()
        what, rows = "kc.ingest + kernels()", len(df)
    wall = time.time() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{what}: {wall:.2f} s, {rows} rows, peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
