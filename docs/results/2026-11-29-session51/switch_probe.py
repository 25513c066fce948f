"""Session 51: does a small kernel run longer after another kernel than after itself?

Deliverable 3 of issue 27 sets each unit alone (its invocations back to back in one graph)
against its kernels in kc's graph. Over session 50's answers the units under 10 us ran a
median 3-12 % faster alone, the units over 10 us within 0.6-2.9 %. This probe asks what a
predecessor does to a kernel's own duration (CUPTI, through torch.profiler), with nothing
of kc: a kernel K captured N times in one CUDA graph, each time after P, for several P:

  self      K after K (a unit alone)
  fill1     after a one-element fill (a different kernel that touches no data of K's)
  sleep     after torch.cuda._sleep (one thread spinning, no memory)
  gemm      after a 1024^3 bf16 GEMM on other data
  flush     after a 128 MiB elementwise pass over other data (L2 turned over)
  producer  after a copy that writes K's input (as a model's producer does)

    python3 switch_probe.py OUT.json
"""
import gzip
import json
import os
import statistics
import sys
import tempfile

import torch
import torch.nn.functional as F

dev = "cuda"
torch.manual_seed(0)
N = 64
REPLAYS = 30

x_ln = torch.randn(8, 4096, device=dev, dtype=torch.bfloat16)
src_ln = torch.randn_like(x_ln)
w_ln = torch.randn(4096, device=dev, dtype=torch.bfloat16)
a_add = torch.randn(1, 32768, device=dev, dtype=torch.bfloat16)
b_add = torch.randn_like(a_add)
src_add = torch.randn_like(a_add)
x_sm = torch.randn(256, 512, device=dev, dtype=torch.float32)
src_sm = torch.randn_like(x_sm)
h_gemv = torch.randn(1, 4096, device=dev, dtype=torch.bfloat16)
src_gemv = torch.randn_like(h_gemv)
W_gemv = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
a_mid = torch.randn(16 << 20, device=dev, dtype=torch.bfloat16)
b_mid = torch.randn_like(a_mid)
src_mid = torch.randn_like(a_mid)

one = torch.zeros(1, device=dev)
g_a = torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16)
g_b = torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16)
big = torch.randn(64 << 20, device=dev, dtype=torch.float16)  # 128 MiB

KERNELS = {
    "layer_norm 8x4096": (lambda: F.layer_norm(x_ln, (4096,), w_ln), lambda: x_ln.copy_(src_ln)),
    "add 32768": (lambda: a_add + b_add, lambda: a_add.copy_(src_add)),
    "softmax 256x512 fp32": (lambda: torch.softmax(x_sm, -1), lambda: x_sm.copy_(src_sm)),
    "gemv 1x4096x4096": (lambda: h_gemv @ W_gemv, lambda: h_gemv.copy_(src_gemv)),
    "add 16M": (lambda: a_mid + b_mid, lambda: a_mid.copy_(src_mid)),
}


def sleep():
    torch.cuda._sleep(2000)


PREDECESSORS = {
    "self": None,
    "fill1": lambda: one.fill_(1.0),
    "sleep": sleep,
    "gemm": lambda: g_a @ g_b,
    "flush": lambda: big.mul_(1.0),
}


def kernel_durations(run_graph):
    """Every kernel's (name, start, duration in us) over REPLAYS replays of a graph."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(REPLAYS):
                run_graph()
            torch.cuda.synchronize()
        prof.export_chrome_trace(path)
        ev = json.load(open(path))["traceEvents"]
    ks = [e for e in ev if e.get("cat") == "kernel"]
    ks.sort(key=lambda e: e["ts"])
    return [(e["name"], e["ts"], e["dur"]) for e in ks]


def graph_of(body):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    return g


out = {"device": torch.cuda.get_device_name(), "N": N, "replays": REPLAYS, "rows": []}
for kname, (k, producer) in KERNELS.items():
    # K's own kernel name, from K alone.
    g = graph_of(lambda: [k() for _ in range(N)])
    rec = kernel_durations(g.replay)
    names = statistics.multimode([n for n, _, _ in rec])
    kernel_name = names[0]
    preds = dict(PREDECESSORS)
    preds["producer"] = producer
    for pname, p in preds.items():
        def body():
            for _ in range(N):
                if p is not None:
                    p()
                k()
        try:
            g = graph_of(body)
        except Exception as e:  # noqa: BLE001 - a predecessor that cannot be captured is said
            out["rows"].append({"kernel": kname, "after": pname, "error": str(e)[:200]})
            continue
        rec = kernel_durations(g.replay)
        # The first of each replay ran after the replay before; every other after P.
        durs = [d for n, _, d in rec if n == kernel_name]
        other = [d for n, _, d in rec if n != kernel_name]
        row = {
            "kernel": kname,
            "name": kernel_name[:90],
            "after": pname,
            "n": len(durs),
            "median_us": statistics.median(durs),
            "mean_us": statistics.fmean(durs),
            "predecessor_median_us": statistics.median(other) if other else None,
        }
        out["rows"].append(row)
        print(json.dumps(row), flush=True)
    del g

base = {r["kernel"]: r["median_us"] for r in out["rows"] if r.get("after") == "self"}
print("\nkernel                  " + "".join(f"{p:>10s}" for p in list(PREDECESSORS) + ["producer"]))
for kname in KERNELS:
    cells = []
    for p in list(PREDECESSORS) + ["producer"]:
        r = next((r for r in out["rows"] if r["kernel"] == kname and r["after"] == p), None)
        if r is None or "median_us" not in r:
            cells.append(f"{'-':>10s}")
        elif p == "self":
            cells.append(f"{r['median_us']:8.2f}us")
        else:
            cells.append(f"{100 * (r['median_us'] / base[kname] - 1):+9.1f}%")
    print(f"{kname:24s}" + "".join(cells))
json.dump(out, open(sys.argv[1], "w"), indent=1)
