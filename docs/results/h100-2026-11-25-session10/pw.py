# Does reading NVML often cost the board power? The model's own CUDA graph measured back to
# back (capture.py's back_to_back) while a thread reads NVML as kc's energy windows did
# (the energy counter every 0.2 ms, power every 10 ms), as kc's now do, or not at all; alternated.
import sys, json, threading, time, argparse
sys.path.insert(0, "traces")
import torch
import capture as c
c.torch = torch
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
ap = argparse.ArgumentParser()
ap.add_argument("--model"); ap.add_argument("--batch", type=int, default=1); ap.add_argument("--seq", type=int, default=128)
ap.add_argument("--layers", type=int); ap.add_argument("--dtype", default="fp16"); ap.add_argument("--mode", default="inference")
a0 = ap.parse_args()
a = argparse.Namespace(model=a0.model, batch=a0.batch, seq=a0.seq, image=224, dtype=a0.dtype, mode=a0.mode, layers=a0.layers,
                       hidden=None, heads=None, kv_heads=None, intermediate=None, vocab=None, channels_last=False,
                       compile=False, optimizer="adamw", iters=3)
torch.manual_seed(0)
step, _ = c.build(a)
for _ in range(5):
    step()
g = c.capture_graph(step)
once = c.time_runs(g.replay, runs=20)["median_us"]

def poll(stop, counter_s, power_s):
    last_p = 0.0
    reads = 0
    while not stop.is_set():
        if counter_s:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(h); reads += 1
        now = time.time()
        if power_s and now - last_p >= power_s:
            pynvml.nvmlDeviceGetPowerUsage(h); last_p = now
        time.sleep(counter_s or power_s or 0.01)
    poll.reads = reads

for tag, cs, ps in [("none", 0, 0), ("counter0.2ms+power10ms", 0.0002, 0.01), ("none", 0, 0),
                    ("counter0.2ms+power10ms", 0.0002, 0.01), ("power10ms", 0, 0.01), ("counter2ms", 0.002, 0), ("none", 0, 0)]:
    stop = threading.Event()
    th = threading.Thread(target=poll, args=(stop, cs, ps)) if (cs or ps) else None
    t0 = time.time()
    if th: th.start()
    r = c.back_to_back(g.replay, once)
    stop.set()
    if th: th.join()
    r["poll"] = tag
    r["reads_per_s"] = getattr(poll, "reads", 0) / (time.time() - t0) if th else 0
    poll.reads = 0
    print(json.dumps(r), flush=True)
