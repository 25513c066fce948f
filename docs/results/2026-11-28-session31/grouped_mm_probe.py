"""Session 31: does the Mixtral decode graph's grouped GEMM (aten::_grouped_mm, its experts'
gate and up projections) run at another speed on the model's weights than on kc's image's?

kc's graph ran it 9.6 % slower than traced (unit 59, call 3), with the model's offsets
(recorded) and the same kernel, grid and block. The model's expert weights come from
transformers' init (from_config, seed 0, as traces/capture.py builds it); kc's image starts
a weight as a 16 MiB pattern, uniform in +-1/sqrt(fan_in), repeated. This builds the model
as capture.py does, prints its expert weights' statistics, and times the grouped GEMM back
to back (CUDA events, 200 calls, median of 5 batches) on the model's weights and on others
in the same layout, with the model's layer-0 and layer-1 offsets.
Run on a GPU machine: python grouped_mm_probe.py (prints one table)."""
import statistics
import sys

import torch
import transformers

torch.manual_seed(0)
cfg = transformers.MixtralConfig(hidden_size=4096, num_hidden_layers=2, num_attention_heads=32,
                                 num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
                                 num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=4096)
model = transformers.AutoModelForCausalLM.from_config(cfg).to(device="cuda", dtype=torch.bfloat16)
experts = model.model.layers[0].mlp.experts
names = [n for n, _ in experts.named_parameters()]
print("experts' parameters:", [(n, tuple(p.shape), p.stride()) for n, p in experts.named_parameters()])
w = dict(experts.named_parameters())
gate_up = next(p for n, p in w.items() if "gate_up" in n)
for n, p in w.items():
    f = p.detach().float()
    print(f"{n}: shape {tuple(p.shape)} zeros {(f == 0).float().mean().item() * 100:.2f} % "
          f"std {f.std().item():.5f} min {f.min().item():.4f} max {f.max().item():.4f} "
          f"finite {torch.isfinite(f).float().mean().item() * 100:.2f} %")

# The layout kc's plan records: [8, 4096, 28672], strides [4096*28672, 1, 4096]: the
# parameter [8, 28672, 4096] transposed.
if gate_up.shape[1] == 4096:
    w_model = gate_up.detach()
else:
    w_model = gate_up.detach().transpose(1, 2)
print("as called:", tuple(w_model.shape), w_model.stride())


def same_layout(fill):
    base = torch.empty(w_model.shape[0], w_model.shape[2], w_model.shape[1], device="cuda", dtype=torch.bfloat16)
    fill(base)
    return base.transpose(1, 2)


def kc_pattern(t):
    # 16 MiB of uniform +-1/sqrt(fan_in) repeated, as kc's image starts a weight.
    n = (16 << 20) // 2
    pat = (torch.rand(n, device="cuda") * 2 - 1) / 4096 ** 0.5
    flat = t.view(-1)
    for s in range(0, flat.numel(), n):
        e = min(flat.numel(), s + n)
        flat[s:e] = pat[: e - s].to(torch.bfloat16)


weights = {
    "model's": w_model,
    "kc's pattern (16 MiB, +-1/64)": same_layout(kc_pattern),
    "uniform +-1/64, not repeated": same_layout(lambda t: t.uniform_(-1 / 64, 1 / 64)),
    "normal std 0.02": same_layout(lambda t: t.normal_(0, 0.02)),
    "zeros": same_layout(lambda t: t.zero_()),
}
x_model = torch.randn(32, 4096, device="cuda", dtype=torch.bfloat16)
xs = {"x normal": x_model, "x uniform +-1": torch.rand(32, 4096, device="cuda", dtype=torch.bfloat16) * 2 - 1}
offsets = {"layer 0 offs": [3, 7, 11, 15, 20, 24, 29, 32], "layer 1 offs": [6, 10, 14, 16, 20, 24, 28, 32]}


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


print(f"{'weights':32s} {'x':14s} {'offsets':13s} {'us':>8s} {'spread %':>8s}")
for on, o in offsets.items():
    offs = torch.tensor(o, device="cuda", dtype=torch.int32)
    for xn, x in xs.items():
        for wn, wt in weights.items():
            t, s = time_us(lambda: torch._grouped_mm(x, wt, offs=offs))
            print(f"{wn:32s} {xn:14s} {on:13s} {t:8.1f} {s:8.2f}")
    sys.stdout.flush()
