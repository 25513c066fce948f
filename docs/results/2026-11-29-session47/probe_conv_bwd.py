#!/usr/bin/env python3
"""Runs each distinct aten::convolution_backward of a Kineto trace once in PyTorch, as
the trace recorded it (shapes, strides, dtypes, output_mask), under the profiler, and
prints the kernels it launched beside the kernels the trace's own call launched.

    probe_conv_bwd.py TRACE.pt.trace.json.gz OUT.txt

Why: kc's replays of 15 convolution_backward units (ConvNeXt's and Swin's patch stems,
ViT's patch embedding, MobileNetV3's squeeze-excitation convolutions) launched one or two
kernels more than the trace held and ran up to 90 % over it (session 46,
kernel_names.txt). This tells whether PyTorch itself, called with the recorded
arguments, launches what the trace holds (kc's call then differs from the recorded one)
or what kc launched (the recorded arguments are not what the model ran).
"""
import gzip
import json
import sys

import torch

trace, out = sys.argv[1], sys.argv[2]
ev = json.load(gzip.open(trace))["traceEvents"]
DT = {"c10::BFloat16": torch.bfloat16, "float": torch.float32, "c10::Half": torch.float16}

# The trace's kernels, by the correlation of the runtime launch that started them.
kernels = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "kernel"}
launches = [e for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})]
ops = [e for e in ev if e.get("cat") == "cpu_op" and e.get("name") == "aten::convolution_backward"]


def traced_kernels(op):
    t0, t1, tid = op["ts"], op["ts"] + op["dur"], op["tid"]
    ks = []
    for l in launches:
        if l["tid"] == tid and t0 <= l["ts"] <= t1:
            k = kernels.get(l["args"]["correlation"])
            if k:
                ks.append((k["name"][:110], k["dur"]))
    return ks


def build(args):
    dims, strides, types = args["Input Dims"], args["Input Strides"], args["Input type"]
    conc = args.get("Concrete Inputs", [""] * len(dims))
    vals = []
    for i, t in enumerate(types):
        if t in DT:
            x = torch.empty_strided(dims[i], strides[i], dtype=DT[t], device="cuda")
            x.normal_()
            vals.append(x)
        elif t == "ScalarList":
            vals.append(json.loads(conc[i].replace("True", "true").replace("False", "false")))
        elif t == "Scalar":
            c = conc[i]
            vals.append(c == "True" if c in ("True", "False") else int(c))
        else:
            vals.append(None)
    return vals


seen = {}
for op in ops:
    a = op["args"]
    key = json.dumps([a["Input Dims"], a["Input Strides"], a.get("Concrete Inputs")])
    if key in seen:
        continue
    seen[key] = op
lines = [f"{trace}: {len(ops)} convolution_backward calls, {len(seen)} distinct"]
for key, op in seen.items():
    a = op["args"]
    try:
        vals = build(a)
    except Exception as e:  # a form the probe does not read: say so and go on
        lines.append(f"-- unreadable {a['Input Dims']}: {e}")
        continue
    variants = [("recorded", vals)]
    mask = vals[10]
    variants.append(("mask all true", vals[:10] + [[True, True, True]]))
    for tag, v in variants:
        f = lambda: torch.ops.aten.convolution_backward(*v)
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
            f()
            torch.cuda.synchronize()
        ks = [(e.name[:110], e.device_time) for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        s, e0 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(20):
            f()
        e0.record()
        torch.cuda.synchronize()
        lines.append(f"-- {tag}: dims {a['Input Dims'][:3]} strides {a['Input Strides'][:2]} concrete {a.get('Concrete Inputs')} "
                     f"types {a['Input type'][:3]}: {len(ks)} kernels, {s.elapsed_time(e0) * 1000 / 20:.1f} us a call")
        for k in ks:
            lines.append(f"     {k[1]:8.1f} us  {k[0]}")
    tk = traced_kernels(op)
    lines.append(f"   traced: {len(tk)} kernels")
    for k in tk:
        lines.append(f"     {k[1]:8.1f} us  {k[0]}")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
