#!/usr/bin/env python3
"""Write a Kineto-format trace of N tiny memsets on one stream, each launched by
cudaMemsetAsync from an aten::zero_ op: the input of kc's per-node graph overhead
measurement (a real trace shape, synthetic content).

    synth_memset_trace.py N OUT.json
"""
import json, sys

def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    n, out = int(sys.argv[1]), sys.argv[2]
    ev = []
    t = 1000.0
    for i in range(n):
        ext, corr = 2 * i + 1, 10_000 + i
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::zero_", "pid": 1, "tid": 1,
                   "ts": round(t, 3), "dur": 4.0,
                   "args": {"External id": ext, "Input Dims": [[64]], "Input type": ["float"],
                            "Input Strides": [[1]], "Concrete Inputs": [""]}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1,
                   "ts": round(t + 1.0, 3), "dur": 2.0, "args": {"External id": ext, "correlation": corr}})
        ev.append({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
                   "ts": round(t + 3.0, 3), "dur": 0.768,
                   "args": {"External id": ext, "device": 0, "context": 1, "stream": 7,
                            "correlation": corr, "bytes": 256}})
        t += 5.0
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "synthetic"}],
           "traceEvents": ev, "traceName": "synthetic memsets"}
    with open(out, "w") as f:
        json.dump(doc, f)

if __name__ == "__main__":
    main()
