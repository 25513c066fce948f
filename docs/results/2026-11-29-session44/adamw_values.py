"""Session 44, call 2: do the values the fused AdamW step reads set its time? Mixtral's
training step (session 41's shapes) misses by +7.4 % because kc times its fused AdamW at
4146 us alone and 4910 us in the round, against 3751 us in kc's graph, at the same places,
the same kernels and the same 1980 MHz clock (call 1: the round drew 540 W, not the cap).
The round ran half the values at its places to non-finite ones. The step's arithmetic is
IEEE-exact by default: a square root of zero, a denormal or a NaN, and a division with one,
leave the fast path for a longer one, and a warp whose lanes differ runs both.

Times one `opt.step()` with CUDA events (median of 15, each from the same saved state
copied back first) over the moments of 10 of the model's steps, with:
  - the model's own gradients (the baseline);
  - the gradients zero at half the elements (at random) or at all;
  - the gradients NaN at 1 %, 10 % or half the elements (at random);
  - the parameters NaN at half the elements;
  - the moments at zero and the gradients zero at half the elements;
  - the gradients at 1e-20 (their squares denormal in fp32).
Prints one JSON line per case, with the share of non-finite and zero gradients. Run from
the repository root on the GPU machine:
  python3 docs/results/2026-11-29-session44/adamw_values.py
"""
import json
import statistics
import sys

import torch

sys.path.insert(0, "traces")
import capture  # noqa: E402  (the same model and optimizer the capture builds)

capture.torch = torch


def main():
    import transformers
    torch.manual_seed(0)
    cls, base, *_ = capture.HF["mixtral"]
    cfg_kw = dict(base, num_hidden_layers=2, hidden_size=2048, num_attention_heads=16,
                  num_key_value_heads=8, intermediate_size=5632, vocab_size=32000)
    cfg = getattr(transformers, cls)(**cfg_kw)
    model = transformers.AutoModelForCausalLM.from_config(cfg).to(device="cuda", dtype=torch.bfloat16)
    model.train()
    inputs = torch.randint(0, 32000, (4, 512), device="cuda")
    opt = capture.OPTIMIZERS["adamw-fused"](model.parameters(), torch)
    params = [p for p in model.parameters() if p.requires_grad]

    def grads():
        opt.zero_grad(set_to_none=False)
        model(inputs, labels=inputs).loss.backward()

    for _ in range(10):
        grads()
        opt.step()
    grads()
    torch.cuda.synchronize()
    saved = {
        "p": [p.detach().clone() for p in params],
        "g": [p.grad.detach().clone() for p in params],
        "m": [opt.state[p]["exp_avg"].clone() for p in params],
        "v": [opt.state[p]["exp_avg_sq"].clone() for p in params],
        "s": [opt.state[p]["step"].clone() for p in params],
    }
    gen = torch.Generator(device="cuda").manual_seed(1)

    def at_random(t, share):
        return torch.rand(t.shape, device=t.device, generator=gen) < share

    def case(name, g=None, p=None, m=None, v=None):
        g = g or (lambda t: t)
        p = p or (lambda t: t)
        m = m or (lambda t: t)
        v = v or (lambda t: t)
        state = {
            "p": [p(t.clone()) for t in saved["p"]],
            "g": [g(t.clone()) for t in saved["g"]],
            "m": [m(t.clone()) for t in saved["m"]],
            "v": [v(t.clone()) for t in saved["v"]],
        }
        n = sum(t.numel() for t in state["g"])
        nonfinite = sum((~torch.isfinite(t)).sum().item() for t in state["g"]) / n
        zero = sum((t == 0).sum().item() for t in state["g"]) / n
        times = []
        for _ in range(15):
            with torch.no_grad():
                for i, q in enumerate(params):
                    q.copy_(state["p"][i])
                    q.grad.copy_(state["g"][i])
                    opt.state[q]["exp_avg"].copy_(state["m"][i])
                    opt.state[q]["exp_avg_sq"].copy_(state["v"][i])
                    opt.state[q]["step"].copy_(saved["s"][i])
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            a.record()
            opt.step()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) * 1000)
        print(json.dumps({"case": name, "median_us": round(statistics.median(times), 1),
                          "min_us": round(min(times), 1), "max_us": round(max(times), 1),
                          "grads_nonfinite": round(nonfinite, 4), "grads_zero": round(zero, 4)}),
              flush=True)

    nan = float("nan")
    case("the model's gradients")
    case("gradients zero at half the elements", g=lambda t: t.masked_fill_(at_random(t, 0.5), 0))
    case("gradients zero", g=lambda t: t.zero_())
    case("gradients NaN at 1 %", g=lambda t: t.masked_fill_(at_random(t, 0.01), nan))
    case("gradients NaN at 10 %", g=lambda t: t.masked_fill_(at_random(t, 0.1), nan))
    case("gradients NaN at half the elements", g=lambda t: t.masked_fill_(at_random(t, 0.5), nan))
    case("parameters NaN at half the elements", p=lambda t: t.masked_fill_(at_random(t, 0.5), nan))
    case("moments zero, gradients zero at half the elements",
         g=lambda t: t.masked_fill_(at_random(t, 0.5), 0), m=lambda t: t.zero_(), v=lambda t: t.zero_())
    case("gradients at 1e-20", g=lambda t: t.fill_(1e-20))
    case("the model's gradients, again")


if __name__ == "__main__":
    main()
