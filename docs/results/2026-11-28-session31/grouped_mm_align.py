"""Session 31: does the Mixtral decode graph's grouped GEMM run at another speed where its
weight starts at another alignment? kc's image placed both layers' expert weights at
offsets aligned to 512 bytes only (2^9); PyTorch's allocator gives a 1.9 GB tensor its own
allocation, aligned to 2 MiB or more. The weights' values do not move its time
(grouped_mm_probe.py). This times torch._grouped_mm back to back (CUDA events, 200 calls,
median of 5 batches) with the weight, in the layout kc's plan records ([8, 4096, 28672],
strides [4096*28672, 1, 4096]), placed at several offsets into one larger allocation, as
kc's arena does, with layer 0's offsets; the same for the down projection.
Run on a GPU machine: python grouped_mm_align.py (prints one table)."""
import statistics

import torch

torch.manual_seed(0)
offs = torch.tensor([3, 7, 11, 15, 20, 24, 29, 32], device="cuda", dtype=torch.int32)


def time_us(fn, calls=200, batches=5):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        per.append(a.elapsed_time(b) * 1000 / calls)
    return statistics.median(per), (max(per) - min(per)) / statistics.median(per) * 100


print(f"{'projection':10s} {'weight offset (bytes)':>22s} {'x offset':>9s} {'us':>8s} {'spread %':>8s}")
for proj, k, n in (("gate_up", 4096, 28672), ("down", 14336, 4096)):
    numel = 8 * k * n
    arena = torch.empty(numel * 2 + (8 << 20), device="cuda", dtype=torch.uint8)
    arena.view(torch.bfloat16)[: numel + (4 << 20)].uniform_(-1 / 64, 1 / 64)
    xa = torch.empty(32 * k * 2 + (1 << 20), device="cuda", dtype=torch.uint8)
    xa.view(torch.bfloat16).normal_()
    for w_off in (0, 512, 4096, 65536, (1 << 20) + 512, 2 << 20, 3 << 19):
        for x_off in (0, 512):
            w = arena[w_off:w_off + numel * 2].view(torch.bfloat16).view(8, n, k).transpose(1, 2)
            x = xa[x_off:x_off + 32 * k * 2].view(torch.bfloat16).view(32, k)
            t, s = time_us(lambda: torch._grouped_mm(x, w, offs=offs))
            print(f"{proj:10s} {w_off:22d} {x_off:9d} {t:8.1f} {s:8.2f}", flush=True)
    del arena, xa
    torch.cuda.empty_cache()
