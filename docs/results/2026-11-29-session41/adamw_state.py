"""Session 41, call 5: does the fused AdamW step of Mixtral's training step (part c's shapes)
take longer on one optimizer state than on another? kc's memory image starts the optimizer's
moments (exp_avg, exp_avg_sq) at zero, where the model ran its profiled steps on moments its
warm-up steps had built. Alone kc times the step over 4149 us, in the round (every launch
from the image's snapshot) 4915 us, and in kc's graph (the moments built up over hundreds
of replays) 3761 us, against 3775 us traced (part d).

Times one `opt.step()` with CUDA events, each from a saved state copied back first:
  - moments at zero, as kc's image has them;
  - moments after 1, 3 and 10 steps of the model (its own gradients);
  - the moments after 10 steps with exp_avg_sq at zero, and with exp_avg at zero.
Prints one JSON line per case: the median and spread over 15 timed steps, and the share of
zeros in the moments. Run from the repository root on the GPU machine:
  python3 docs/results/2026-11-29-session41/adamw_state.py
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

    def snapshot():
        return {id(p): {k: v.clone() for k, v in opt.state[p].items()} for p in params}

    def restore(s):
        for p in params:
            for k, v in s[id(p)].items():
                opt.state[p][k].copy_(v)

    def zeros_share(s, key):
        n = z = 0
        for p in params:
            t = s[id(p)][key]
            n += t.numel()
            z += (t == 0).sum().item()
        return z / n

    grads()
    opt.step()  # creates the state
    for p in params:
        opt.state[p]["exp_avg"].zero_()
        opt.state[p]["exp_avg_sq"].zero_()
        opt.state[p]["step"].zero_()
    states = {"moments at zero (kc's image)": snapshot()}
    done = 0
    for n in (1, 3, 10):
        while done < n:
            grads()
            opt.step()
            done += 1
        states[f"after {n} steps"] = snapshot()
    s10 = states["after 10 steps"]
    mixed = {k: {kk: vv.clone() for kk, vv in v.items()} for k, v in s10.items()}
    for v in mixed.values():
        v["exp_avg_sq"].zero_()
    states["after 10 steps, exp_avg_sq at zero"] = mixed
    mixed = {k: {kk: vv.clone() for kk, vv in v.items()} for k, v in s10.items()}
    for v in mixed.values():
        v["exp_avg"].zero_()
    states["after 10 steps, exp_avg at zero"] = mixed
    grads()  # the gradients every timed step reads
    torch.cuda.synchronize()
    for name, s in states.items():
        times = []
        for _ in range(15):
            restore(s)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            a.record()
            opt.step()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) * 1000)
        print(json.dumps({"state": name, "median_us": round(statistics.median(times), 1),
                          "min_us": round(min(times), 1), "max_us": round(max(times), 1),
                          "exp_avg_zeros": round(zeros_share(s, "exp_avg"), 4),
                          "exp_avg_sq_zeros": round(zeros_share(s, "exp_avg_sq"), 4)}), flush=True)


if __name__ == "__main__":
    main()
