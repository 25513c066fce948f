#!/usr/bin/env python3
"""What a CUDA-graph capture launched against what its graph replays: the capture trace's
launch, copy and fill calls between the capture's begin and end that ran nothing (the ones
`kc ingest --capture` pairs with the replay's activities), by API and with the op around
each non-kernel call, and the replay trace's GPU activities of its first replay by kind.
A diagnosis for "the capture launched N, the graph replays M".

    python3 tools/capture_calls.py CAPTURE.pt.trace.json.gz [REPLAY.pt.trace.json.gz]"""
import collections, gzip, json, sys


def events(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f).get("traceEvents", [])


cap = events(sys.argv[1])
ran = {e.get("args", {}).get("correlation") for e in cap
       if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
rt = [e for e in cap if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"]
begin = min((e["ts"] for e in rt if "BeginCapture" in e["name"]), default=float("-inf"))
end = max((e["ts"] for e in rt if "EndCapture" in e["name"]), default=float("inf"))
ops = sorted((e for e in cap if e.get("cat") == "cpu_op" and e.get("ph") == "X"), key=lambda e: e["ts"])


def op_around(e):
    best = None
    for o in ops:
        if o["ts"] <= e["ts"] <= o["ts"] + o.get("dur", 0) and o.get("tid") == e.get("tid"):
            best = o["name"]
    return best


launch = lambda n: ("LaunchKernel" in n or "LaunchCooperativeKernel" in n or
                    ("Memcpy" in n and "Async" in n) or ("Memset" in n and "Async" in n))
calls = [e for e in rt if begin <= e["ts"] <= end and launch(e["name"])
         and e.get("args", {}).get("correlation") not in ran]
print("capture: %d launch/copy/fill calls that ran nothing" % len(calls))
for k, v in collections.Counter(e["name"] for e in calls).most_common():
    print("  %5d %s" % (v, k))
for i, e in enumerate(sorted(calls, key=lambda e: e["ts"])):
    if "LaunchKernel" not in e["name"]:
        print("  #%d %s args=%s op=%s" % (i, e["name"], json.dumps(e.get("args", {}))[:200], op_around(e)))
others = collections.Counter(e["name"] for e in rt if begin <= e["ts"] <= end and not launch(e["name"]))
print("other runtime calls in the capture:", dict(others.most_common(12)))
if len(sys.argv) > 2:
    rep = sorted((e for e in events(sys.argv[2]) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                 key=lambda e: e["ts"])
    print("replay: %d GPU activities in the trace" % len(rep))
    print("  by kind:", dict(collections.Counter(e["cat"] for e in rep)))
    print("  copies and fills:", dict(collections.Counter((e["cat"], e["name"]) for e in rep if e["cat"] != "kernel")))
