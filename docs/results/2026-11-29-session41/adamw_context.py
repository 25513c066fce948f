"""Session 41, call 6: what the fused AdamW step of Mixtral's training step (part c's shapes)
takes after what. kc timed it 3 761 us in its graph of the step (after the backward pass),
4 149 us alone (launches of three steps back to back), 4 915 us in the round (every unit
once a cycle; twelve of them, the grouped GEMMs, draw past the power limit alone) and
3 775 us traced (part d). Its moments' values do not move it (call 5, adamw_state.py).

Times one `opt.step()` with CUDA events after each of:
  - the step's own forward and backward pass (as in the model and in kc's graph);
  - another optimizer step (the second and third of three back to back, as alone);
  - a 12.9 GB device copy (kc's restoring round copies its 12.9 GB image first);
  - 10 ms of bf16 GEMMs of 8192^3 (power-hungry neighbours, as in the round);
  - 50 ms of an idle GPU (`torch.cuda._sleep`).
Prints one JSON line per case: the median, minimum and maximum over 15 timed steps, and
the SM clock NVML reported after them (`torch.cuda.clock_rate`, where pynvml is there). Run from the repository
root on the GPU machine:
  python3 docs/results/2026-11-29-session41/adamw_context.py
"""
import json
import statistics
import sys

import torch

sys.path.insert(0, "traces")
import capture  # noqa: E402  (the same model and optimizer the capture builds)

capture.torch = torch


def clock():
    """The SM clock NVML reports now (MHz), where pynvml is there to ask."""
    try:
        return torch.cuda.clock_rate()
    except Exception:  # pynvml missing: the timings stand alone
        return None


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

    def fwd_bwd():
        opt.zero_grad(set_to_none=False)
        model(inputs, labels=inputs).loss.backward()

    for _ in range(3):
        fwd_bwd()
        opt.step()
    big = torch.empty(int(12.9e9) // 2, dtype=torch.bfloat16, device="cuda")
    big_to = torch.empty_like(big)
    a_mm = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b_mm = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def gemms():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        n = 0
        while True:
            for _ in range(8):
                torch.mm(a_mm, b_mm)
            n += 8
            end.record()
            end.synchronize()
            if start.elapsed_time(end) >= 10.0 or n >= 200:
                break
        # The last GEMMs queued right before the step: the GPU stays busy into it.
        for _ in range(8):
            torch.mm(a_mm, b_mm)

    cases = {
        "after its forward and backward pass": fwd_bwd,
        "after another optimizer step (back to back)": lambda: opt.step(),
        "after a 12.9 GB device copy": lambda: big_to.copy_(big),
        "after 10 ms of bf16 GEMMs 8192^3": gemms,
        # About 50 ms of a one-thread spin at the H200's 1.98 GHz: the GPU otherwise idle.
        "after 50 ms idle": lambda: torch.cuda._sleep(100_000_000),
    }
    for name, before in cases.items():
        times = []
        for _ in range(15):
            torch.cuda.synchronize()
            before()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            opt.step()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) * 1000)
        print(json.dumps({"case": name, "median_us": round(statistics.median(times), 1),
                          "min_us": round(min(times), 1), "max_us": round(max(times), 1),
                          "sm_clock_mhz_after": clock()}), flush=True)


if __name__ == "__main__":
    main()
