"""Session 42, call 3: whether a softmax's time depends on its data. Swin3D-T's shifted-window
blocks add -100 to the logits of the window's other regions, and their softmax ran 38 us an
invocation slower than the unshifted blocks' of the same shape (call 2's trace: 67 against
29 us). Here one shape, (8, 12, 392, 392) bf16 as Swin3D-T's third stage runs it, timed by
CUPTI (torch.profiler), 20 launches each, on: standard normal logits; the same with -100
added to a half of each row (a mask like the shifted windows'); with -20 added there; with
-inf there; and on values in [0, 1] (a softmax's own output, which a unit alone reads where
its invocations chain). Prints one JSON line per input.
Run: python3 softmax_mask.py > softmax_mask.jsonl"""
import json
import torch

shape = (8, 12, 392, 392)
torch.manual_seed(0)
base = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
half = torch.zeros(shape[-1], device="cuda", dtype=torch.bfloat16)
half[shape[-1] // 2:] = 1


def masked(v):
    return (base + half * v).to(torch.bfloat16)


inputs = {
    "normal": base,
    "mask -100": masked(-100.0),
    "mask -20": masked(-20.0),
    "mask -inf": base.masked_fill(half.bool(), float("-inf")),
    "softmax output": torch.softmax(base, -1),
}
for name, x in inputs.items():
    out = torch.empty_like(x)
    run = lambda: torch.ops.aten._softmax.out(x, -1, False, out=out)
    run()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            run()
        torch.cuda.synchronize()
    dur = lambda e: next(getattr(e, a) for a in ("device_time", "cuda_time") if hasattr(e, a))
    ks = [dur(e) for e in prof.events()
          if e.device_type == torch.autograd.DeviceType.CUDA and "oftmax" in e.name]
    print(json.dumps({"input": name, "kernels": len(ks), "mean_us": sum(ks) / max(len(ks), 1),
                      "min_us": min(ks, default=None), "max_us": max(ks, default=None)}))
