"""Prepared in session 31 for the next session (not yet run): are the offsets Mixtral's
decode graph ran its grouped GEMMs with the ones kc was given, and how long does the GEMM
take in the model's own graph against alone on the graph's own tensors?

kc's graph runs the experts' gate-and-up `aten::_grouped_mm` at 719.6 us a step where the
model's graph runs it at 658.1 us; kc took 615-654 us while it drew the offsets and 719 us
from the call that first gave it the recorded ones (MEASUREMENTS, session 31). The offsets
are recorded in an eager run of the step after the profiled capture (capture.py's
`record_values`). This builds the step as capture.py does (`--model mixtral --layers 2
--batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph`), captures it in a CUDA graph
under a dispatch mode that keeps each grouped GEMM's tensors, replays it, and prints:
1. the offsets the graph's replay left in those tensors, against an eager run's (as the
   values run sees the step);
2. each grouped GEMM kernel's duration in five profiled replays of the model's graph;
3. each grouped GEMM alone, back to back (CUDA events), on the graph's own tensors.
Run from the repository root on a GPU machine: python docs/results/2026-11-28-session31/mixtral_offsets_probe.py"""
import argparse
import os
import statistics
import sys
import tempfile
import json

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "traces"))
import capture  # noqa: E402

capture.torch = torch


class KeepGroupedMm(TorchDispatchMode):
    """Keeps (x, w, offs) of every `_grouped_mm` call, in call order."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.__name__.startswith("_grouped_mm"):
            offs = kwargs.get("offs", args[2] if len(args) > 2 else None)
            self.calls.append((args[0], args[1], offs))
        return func(*args, **kwargs)


a = argparse.Namespace(model="mixtral", layers=2, hidden=None, heads=None, kv_heads=None,
                       intermediate=None, vocab=None, batch=16, seq=256, image=224, dtype="bf16",
                       mode="decode", optimizer="adamw", channels_last=False, compile=False)
torch.manual_seed(0)
step, _ = capture.build(a)
for _ in range(5):
    step()
torch.cuda.synchronize()

capture.warm_up_for_capture(step)
in_graph = KeepGroupedMm()
g = torch.cuda.CUDAGraph()
with in_graph:
    with torch.cuda.graph(g):
        step()
g.replay()
torch.cuda.synchronize()
graph_offs = [o.tolist() for _, _, o in in_graph.calls]

eager = KeepGroupedMm()
with capture.capturing_as_seen_by_python():
    with eager:
        step()
torch.cuda.synchronize()
eager_offs = [o.tolist() for _, _, o in eager.calls]

print("1. offsets, call by call (graph replay | eager run as the values run sees it):")
for i, (go, eo) in enumerate(zip(graph_offs, eager_offs)):
    print(f"   call {i}: {go} | {eo}{'' if go == eo else '   DIFFER'}")
print(f"   {len(graph_offs)} calls in the graph, {len(eager_offs)} eager")

path = os.path.join(tempfile.mkdtemp(), "replays.json")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
prof.export_chrome_trace(path)
events = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
gemms = [e["dur"] for e in sorted(events, key=lambda e: e["ts"]) if "GroupProblemShape" in e["name"]]
per_replay = len(gemms) // 5
print(f"2. grouped GEMM kernels in the model's graph, us ({per_replay} a replay, 5 replays):")
for k in range(per_replay):
    print(f"   call {k}: " + ", ".join(f"{d:.1f}" for d in gemms[k::per_replay]))


def time_us(fn, calls=200, batches=5):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(batches):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        per.append(s.elapsed_time(e) * 1000 / calls)
    return statistics.median(per)


print("3. each grouped GEMM alone, back to back, on the graph's own tensors (us, prepare kernel included):")
for i, (x, w, o) in enumerate(in_graph.calls):
    print(f"   call {i}: {time_us(lambda: torch._grouped_mm(x, w, offs=o)):.1f}")
