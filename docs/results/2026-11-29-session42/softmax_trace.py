"""Session 42: Swin3D-T's softmax kernels as the model's own trace (call 2, part b, kept with
KEEP=1) ran them, in order: one forward's blocks alternate unshifted and shifted windows, and
the shifted ones' softmax (logits with -100 added outside each window's region) runs longer.
Run: python3 softmax_trace.py DIR   (DIR: call2-b-kc-zg.txz unpacked; reads b/swin3d_t.pt.trace.json.gz)"""
import gzip
import json
import sys

trace = json.load(gzip.open(f"{sys.argv[1]}/b/swin3d_t.pt.trace.json.gz"))
kernels = sorted((e for e in trace["traceEvents"]
                  if e.get("cat") == "kernel" and "softmax_warp_forward" in e.get("name", "")),
                 key=lambda e: e["ts"])
per_forward = len(kernels) // 3
for it in range(3):
    print(f"iteration {it + 1}:", " ".join(f"{e['dur']:.1f}" for e in kernels[it * per_forward:(it + 1) * per_forward]))
