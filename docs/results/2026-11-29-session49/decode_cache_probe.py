"""Session 49: does a decode step's CUDA graph read a KV cache its capture freed?

capture.py's decode step until fff7409 cropped the cache after each call, so the cache held a
view of the step's own concatenation; a captured graph then reads on every replay the tensors
the cache held when it was captured, which the capture's step dropped. This builds the step
both ways (the old crop, the new restore) with capture.py's own build(), and for each:
captures one graph as capture.py does, runs eager steps as capture.py does between its
capture and its profiled replays (the values run, the eager timing), then checks one replay
against one eager step (capture.replay_against_eager) and times the graph's replays (median
of 50 after 10, CUDA events). Run on the GPU machine from the repository root:
    python docs/results/2026-11-29-session49/decode_cache_probe.py MODEL [capture.py shape flags]
e.g. mixtral --layers 2 --batch 16 --seq 256 --dtype bf16. Prints one JSON line per variant.
"""
import argparse
import json
import sys

sys.path.insert(0, "traces")
import capture  # noqa: E402
import torch  # noqa: E402

capture.torch = torch


def old_decode_step(model, cfg, a, dtype, vocab):
    """capture.py's decode step before fff7409: the cache cropped back after each call."""
    import transformers
    model.to(device="cuda", dtype=dtype)
    cache = transformers.DynamicCache()
    context = torch.randint(0, vocab, (a.batch, a.seq), device="cuda")
    with torch.no_grad():
        model(context, past_key_values=cache, use_cache=True)
    token = torch.randint(0, vocab, (a.batch, 1), device="cuda")

    def call():
        out = model(token, past_key_values=cache, use_cache=True)
        cache.crop(a.seq)
        return out
    return call


def args(argv):
    p = argparse.ArgumentParser()
    p.add_argument("model")
    for flag in capture.KEYS:
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, type=int)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--dtype", default="bf16")
    a = p.parse_args(argv)
    a.mode, a.image, a.frames, a.iters, a.optimizer = "decode", 224, 16, 3, "adamw"
    a.tf32 = a.channels_last = a.compile = False
    a.cuda_graph, a.no_values = True, True
    return a


def probe(variant, a):
    torch.manual_seed(0)
    saved = capture.decode_step
    if variant == "old (crop)":
        capture.decode_step = old_decode_step
    try:
        step, _ = capture.build(a)
    finally:
        capture.decode_step = saved
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    g, out = capture.capture_graph(step)
    # What capture.py runs between its capture and the profiled replays: eager steps.
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    check = capture.replay_against_eager(g, out, step)
    t = capture.time_runs(g.replay)
    print(json.dumps({"model": a.model, "variant": variant, "graph_median_us": t["median_us"],
                      "replay_against_eager": check}), flush=True)
    del g, out, step
    torch.cuda.empty_cache()


if __name__ == "__main__":
    a = args(sys.argv[1:])
    for v in ("old (crop)", "new (restore)", "old (crop)", "new (restore)"):
        probe(v, a)
