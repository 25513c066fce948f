"""Session 42, call 2: where Swin3D-T's softmax time goes. kc's graph of Swin3D-T (and the
model's own trace) ran its three softmax units 20-24 us an invocation slower than kc's units
alone, in kc's round, and after their lead-ins (call 1). Here, in PyTorch alone, on the GPU:
each softmax invocation of one forward (batch 2, 16 frames, 224², bf16) is timed by CUPTI
(torch.profiler kernel durations) four ways:
  model:     inside the model's forward, as the model runs it;
  alone:     the same input tensor, softmax repeated back to back;
  producer:  its producer (the op that wrote its input) run again and its output copied
             into the input, then the softmax, repeated (the softmax's duration only);
  fresh:     alone on a copy of the input in fresh memory.
Prints one JSON line per softmax shape with the mean kernel duration of each way.
Run: python3 swin3d_softmax.py > swin3d_softmax.jsonl"""
import json
import torch
import torchvision
from torch.utils._python_dispatch import TorchDispatchMode

torch.manual_seed(0)
model = torchvision.models.get_model("swin3d_t", weights=None).cuda().to(torch.bfloat16).eval()
clip = torch.randn(2, 3, 16, 224, 224, device="cuda", dtype=torch.bfloat16)


class Record(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.calls.append((func, args, kwargs or {}, out))
        return out


def softmax_kernels(fn, repeats):
    """CUPTI durations (us) of the softmax kernels `fn` runs, `repeats` times after a warm-up."""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            fn()
        torch.cuda.synchronize()
    dur = lambda e: next(getattr(e, a) for a in ("device_time", "cuda_time") if hasattr(e, a))
    return [dur(e) for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CUDA and "oftmax" in e.name]


with torch.no_grad():
    for _ in range(3):
        model(clip)
    torch.cuda.synchronize()
    in_model = softmax_kernels(lambda: model(clip), 3)
    rec = Record()
    with rec:
        model(clip)
    torch.cuda.synchronize()

calls = rec.calls
soft = [i for i, c in enumerate(calls) if c[0] is torch.ops.aten._softmax.default]
rows = {}
per_forward = len(soft)
for k, i in enumerate(soft):
    func, args, kwargs, out = calls[i]
    x = args[0]
    key = f"{tuple(x.shape)} stride {tuple(x.stride())}"
    row = rows.setdefault(key, {"shape": key, "invocations": 0, "model": [], "alone": [], "producer": [], "fresh": [], "producers": []})
    row["invocations"] += 1
    row["model"] += in_model[k::per_forward]
    with torch.no_grad():
        row["alone"] += softmax_kernels(lambda: func(*args, **kwargs), 20)
        fresh = x.clone()
        fargs = (fresh,) + tuple(args[1:])
        row["fresh"] += softmax_kernels(lambda: func(*fargs, **kwargs), 20)
        # The producer: the latest call before it whose output is the softmax's input.
        p = next((j for j in range(i - 1, -1, -1) if isinstance(calls[j][3], torch.Tensor)
                  and calls[j][3].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()), None)
        if p is not None:
            pf, pa, pk, _ = calls[p]
            row["producers"].append(str(pf))
            # Its output copied into the softmax's input, so that the input is just written.
            def after_producer():
                y = pf(*pa, **pk)
                if y.numel() == x.numel():
                    x.copy_(y.view_as(x))
                func(*args, **kwargs)
            row["producer"] += softmax_kernels(after_producer, 20)
mean = lambda v: sum(v) / len(v) if v else None
for r in rows.values():
    print(json.dumps({"shape": r["shape"], "invocations_per_forward": r["invocations"],
                      "producers": sorted(set(r["producers"])),
                      **{w: mean(r[w]) for w in ("model", "alone", "producer", "fresh")},
                      "model_n": len(r["model"])}))
