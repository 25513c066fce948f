#!/usr/bin/env python3
"""Profile a model with torch.profiler and record what kc needs to judge a replay.

    capture.py --model qwen2 [--layers 8] [--batch 1] [--seq 128] [--dtype fp16]
               [--iters 3] [--mode inference|train|decode] [--channels-last] [--frames 16]
               [--compile | --cuda-graph] --out DIR

Writes into DIR:
  NAME.pt.trace.json.gz   Kineto trace (CPU + CUDA activities, record_shapes=True),
                          ProfilerStep#N per iteration
  NAME.et.json.gz         PyTorch Execution Trace of the same iterations (kc --shapes)
  NAME.values.bin         the values the step's integer and boolean input tensors held
                          (indices, masks, MoE routing), keyed by the node ids of
                          NAME.et.json.gz (kc ingest --values; format in kc's
                          docs/FORMATS.md). Recorded in two more iterations after the
                          profiled ones (so the copies do not slow them): integers by
                          PyTorch's Execution Trace observer
                          (ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA), booleans
                          by a dispatch mode. Tensors over 16 MiB, and integer ones that are
                          not contiguous, are left out; --no-values skips it. The values
                          run's nodes are matched to the profiled ones by the longest
                          matching blocks of op names; reference.json's "values" says how
                          many matched ("matching"), and KC_KEEP_VALUES_ET=1 keeps the
                          values run's ET beside it (NAME.values_run.et.json.gz).
  NAME.inductor_cache.tar.gz  with --compile: the Inductor cache the model's Triton
                          kernels were compiled into (kc ingest --inductor-cache)
  NAME_eager.pt.trace.json.gz, NAME_eager.et.json.gz  with --cuda-graph: NAME's trace then
                          holds replays of the step captured in one CUDA graph (kernels
                          launched by cudaGraphLaunch, no ops), and these are the eager
                          trace of the same step that lends them their ops
                          (kc ingest NAME... --eager NAME_eager...)
  NAME_capture.pt.trace.json.gz, NAME_capture.et.json.gz, NAME_capture.values.bin  with
                          --cuda-graph: the profiled capture of that graph (kc ingest NAME...
                          --capture ... --shapes ...), and the values its integer and boolean
                          tensors held, from one eager run of the step as the capture sees it,
                          keyed by the capture ET's node ids (--values)
  NAME.graph_replays.trace.json.gz  the profiled replays of the step's CUDA graph (5, CUDA
                          activities), which kc report sets kc's graph beside kernel by
                          kernel (reference.json's cuda_graph.replay_trace)
  reference.json          eager and CUDA-graph time per iteration (CUDA events, median/
                          min/max over 50 runs after 10 warm-ups) and NVML energy per run
                          (total-energy counter over a >= 2 s loop), like
                          ../shared/traces/h100/reference.json; cuda_graph.replay_against_eager
                          (and, with --cuda-graph, replay_against_eager for the profiled
                          graph): whether one replay's output matches one eager step's,
                          within 1 % in root mean square (inference and decode; a training
                          step changes its weights)

Models: Hugging Face causal LMs built from a config with random weights (qwen2, mistral,
llama, gpt2, bloom, mixtral and qwen3_moe (mixtures of experts)) or the encoder-decoder t5 (T5-base shapes;
--layers sets the encoder's); shape flags override the defaults; or any torchvision model name
(resnet50, vit_b_16, ...), also with random weights. Nothing is downloaded.

Requirements (on the GPU machine): a CUDA build of PyTorch (torch >= 2.4; 2.11 is what kc
is tested with), transformers for the Hugging Face models, torchvision for the others, and
pynvml (nvidia-ml-py) for energy (without it, times only). `--help` needs none of them.

reference.json gathers every capture written into DIR: a second capture adds its entry
under its own name and keeps the others (one with the same name is replaced, and said).
"""
import argparse
import gzip
import json
import math
import os
import shutil
import statistics
import sys
import time

# torch is imported by the functions that need it, so `--help` works without it.
torch = None

# Published shapes of the base configs; --layers etc. override them.
HF = {
    "qwen2": ("Qwen2Config", dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                                  num_key_value_heads=2, intermediate_size=4864, vocab_size=151936,
                                  max_position_embeddings=4096)),
    "mistral": ("MistralConfig", dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                                      num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
                                      max_position_embeddings=4096)),
    "llama": ("LlamaConfig", dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                                  num_key_value_heads=32, intermediate_size=11008, vocab_size=32000)),
    "gpt2": ("GPT2Config", dict(n_embd=768, n_layer=12, n_head=12, vocab_size=50257)),
    "bloom": ("BloomConfig", dict(hidden_size=1024, n_layer=24, n_head=16, vocab_size=250880)),
    # Mixture of experts: 8 experts, 2 chosen per token (routing: topk, sort, histc, index).
    "mixtral": ("MixtralConfig", dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                                      num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
                                      num_local_experts=8, num_experts_per_tok=2,
                                      max_position_embeddings=4096)),
    # Mixture of experts, many small experts (Qwen3-30B-A3B shapes): 128 experts, 8 per token.
    "qwen3_moe": ("Qwen3MoeConfig", dict(hidden_size=2048, num_hidden_layers=48, num_attention_heads=32,
                                         num_key_value_heads=4, moe_intermediate_size=768, num_experts=128,
                                         num_experts_per_tok=8, intermediate_size=6144, vocab_size=151936,
                                         max_position_embeddings=4096)),
    # Encoder-decoder (T5-base shapes): the encoder reads --seq tokens, the decoder --seq / 4.
    # A training step shifts its labels right behind the decoder's start token, which
    # transformers 5 leaves unset in a bare T5Config (T5 starts from the pad token, 0).
    "t5": ("T5Config", dict(d_model=768, num_layers=12, num_decoder_layers=12, num_heads=12,
                            d_ff=3072, vocab_size=32128, decoder_start_token_id=0, pad_token_id=0)),
    # Encoder only (BERT-base shapes), as a masked language model: a training step's loss is
    # the masked-LM loss over every position (labels = the inputs).
    "bert": ("BertConfig", dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                intermediate_size=3072, vocab_size=30522), "AutoModelForMaskedLM"),
}
# The optimizers a training step can take (--optimizer), as torch.optim builds them.
# Adam-family optimizers keep their step count on the GPU (`capturable=True`) so that the
# step can also be captured in the model's own CUDA graph, the reference kc is judged against.
OPTIMIZERS = {
    "adamw": lambda params, torch: torch.optim.AdamW(params, lr=1e-4, capturable=True),
    "adamw-fused": lambda params, torch: torch.optim.AdamW(params, lr=1e-4, fused=True, capturable=True),
    "adamw-foreach": lambda params, torch: torch.optim.AdamW(params, lr=1e-4, foreach=True, capturable=True),
    "adam-fused": lambda params, torch: torch.optim.Adam(params, lr=1e-4, fused=True, capturable=True),
    "sgd-momentum": lambda params, torch: torch.optim.SGD(params, lr=1e-2, momentum=0.9),
}
# Which config key each shape flag sets, per config family.
KEYS = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head", "num_heads"),
    "kv_heads": ("num_key_value_heads",),
    "intermediate": ("intermediate_size",),
    "vocab": ("vocab_size",),
}
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


def eager_hf_note(a):
    """Why a Hugging Face model traced eager is not quite like with like with its CUDA graph,
    the reference kc is judged against: under a stream capture Hugging Face builds the step
    otherwise (explicit attention masks), and the graph runs that program (13-59 more GPU
    activities per iteration than the eager trace on the Qwen2, T5 and LLaMA training steps,
    session 31). None where the trace is the graph itself (--cuda-graph), compiled, or not a
    Hugging Face model."""
    if a.model not in HF or a.cuda_graph or a.compile or a.remeasure or a.profile_replay:
        return None
    return ("capture.py: note: the model's CUDA graph (where the step captures), the reference kc is compared with, runs "
            "this step as Hugging Face builds it under a stream capture, which differs from the "
            "eager step traced here; --cuda-graph traces the graph itself, like with like")


def build(a):
    dtype = getattr(torch, DTYPES[a.dtype])
    if a.model in HF:
        import transformers
        capture_safe_eager_mask()
        cls_name, base, *auto = HF[a.model]
        cfg_kw = dict(base)
        for flag, keys in KEYS.items():
            v = getattr(a, flag)
            if v is not None:
                key = next((k for k in keys if k in cfg_kw), keys[0])
                cfg_kw[key] = v
        cfg = getattr(transformers, cls_name)(**cfg_kw)
        vocab = cfg_kw.get("vocab_size")
        inputs = torch.randint(0, vocab, (a.batch, a.seq), device="cuda")
        desc = {"config": cls_name, **cfg_kw}

        def loss_of(out):
            return out.loss
        if cfg.is_encoder_decoder:
            if a.mode == "decode":
                sys.exit("capture.py: --mode decode is for decoder-only models")
            model = transformers.AutoModelForSeq2SeqLM.from_config(cfg)
            targets = torch.randint(0, vocab, (a.batch, max(1, a.seq // 4)), device="cuda")
            desc["decoder_seq"] = targets.shape[1]
            call = ((lambda: model(input_ids=inputs, labels=targets)) if a.mode == "train"
                    else (lambda: model(input_ids=inputs, decoder_input_ids=targets)))
        else:
            model = getattr(transformers, (auto or ["AutoModelForCausalLM"])[0]).from_config(cfg)
            # A training step keeps no KV cache: without use_cache=False transformers makes
            # one anyway, and Mistral's sliding-window cache copies a host tensor to the
            # device on its first use, which a CUDA graph capture refuses (session 45).
            call = ((lambda: model(inputs, labels=inputs, use_cache=False)) if a.mode == "train"
                    else (lambda: model(inputs)))
        if a.mode == "decode":
            call = decode_step(model, cfg, a, dtype, vocab)
            desc["decode_context"] = a.seq
    else:
        import torchvision
        try:
            # Segmentation and detection builders would fetch their backbone's ImageNet
            # weights by default; random weights need no network.
            model = torchvision.models.get_model(a.model, weights=None, weights_backbone=None)
        except TypeError:  # a classifier's builder takes no backbone
            model = torchvision.models.get_model(a.model, weights=None)
        video = a.model in torchvision.models.list_models(module=torchvision.models.video)
        # A video model reads clips: (batch, channels, frames, height, width).
        clip = (a.frames,) if video else ()
        inputs = torch.randn(a.batch, 3, *clip, a.image, a.image, device="cuda", dtype=dtype)
        # Kinetics-400's classes for a video model, ImageNet's for an image one.
        labels = torch.randint(0, 400 if video else 1000, (a.batch,), device="cuda")
        desc = {"torchvision": a.model, "image": a.image, **({"frames": a.frames} if video else {})}

        def loss_of(out):
            return torch.nn.functional.cross_entropy(out.float(), labels)
        call = lambda: model(inputs)
    model = model.to(device="cuda", dtype=dtype)
    if a.channels_last:
        # Channels-last of a clip (5-D) is its 3-D form.
        fmt = torch.channels_last_3d if inputs.dim() == 5 else torch.channels_last
        model = model.to(memory_format=fmt)
        inputs = inputs.contiguous(memory_format=fmt)
        desc["channels_last"] = True
    if a.compile:
        # The calls above look `model` up when they run, so they run the compiled module.
        model = torch.compile(model)
        desc["compiled"] = "torch.compile (Inductor, default mode)"
    if a.mode == "train":
        model.train()
        opt = OPTIMIZERS[a.optimizer](model.parameters(), torch)
        desc["optimizer"] = a.optimizer

        def step():
            loss = loss_of(call())
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    else:
        model.eval()

        def step():  # inference and decode: the output, for `replay_against_eager`
            with torch.no_grad():
                return call()
    return step, desc


def capture_safe_eager_mask():
    """transformers' eager attention mask (BLOOM's, whose ALiBi attention has no SDPA path)
    makes its zero with `torch.tensor(0.0, device=cuda)`, a copy from pageable host memory
    that a stream capture refuses, so the model's own CUDA graph could not be captured. The
    mask is made the same way but with that zero filled on the device (one fill kernel in
    place of one copy), so every run of the step, eager or captured, launches the same work."""
    try:
        from transformers import masking_utils as mu
    except ImportError:  # transformers before masking_utils builds its masks otherwise
        return
    original = mu.eager_mask

    def eager_mask(*args, **kwargs):
        real = torch.tensor

        def tensor(data, *targs, device=None, dtype=None, **tkw):
            if (isinstance(data, (int, float)) and not targs and not tkw and device is not None
                    and torch.device(device).type == "cuda"):
                return torch.full((), data, device=device, dtype=dtype)
            return real(data, *targs, device=device, dtype=dtype, **tkw)
        torch.tensor = tensor
        try:
            return original(*args, **kwargs)
        finally:
            torch.tensor = real
    mu.eager_mask = eager_mask
    # The mask interface looks its functions up by name when a model builds its mask (a
    # class-wide mapping in transformers 5, a plain dict before).
    interface = mu.ALL_MASK_ATTENTION_FUNCTIONS
    mapping = getattr(type(interface), "_global_mapping", None)
    (mapping if mapping is not None else interface)["eager"] = eager_mask


def decode_step(model, cfg, a, dtype, vocab):
    """One decode step of `a.batch` sequences after a prefilled context of `a.seq` tokens:
    the step appends one token to the KV cache, and the cache is put back to the prefilled
    context after it (the same tensors, no GPU work), so every step is the same and a CUDA
    graph can replay it.

    Why put back rather than crop: the cache's `update` concatenates into a new tensor, so
    after a crop the cache holds a view of the previous step's result. A CUDA graph then
    reads, on every replay, the tensors the cache held when it was captured, which the
    capture's own step drops: freed, that memory is handed to whatever runs next, and the
    graph's attention (and a mixture of experts' routing after it) read someone else's
    data. Until session 49 the decode graphs measured as the models read such data, and
    Mixtral's routed its tokens by it. Keeping the prefilled tensors referenced here and
    restoring them after every step makes eager steps, captures and replays read the same
    live context."""
    import transformers
    model.to(device="cuda", dtype=dtype)
    cache = transformers.DynamicCache()
    context = torch.randint(0, vocab, (a.batch, a.seq), device="cuda")
    with torch.no_grad():
        model(context, past_key_values=cache, use_cache=True)
    token = torch.randint(0, vocab, (a.batch, 1), device="cuda")
    prefilled = cache_state(cache)
    if cache.get_seq_length() != a.seq:
        sys.exit(f"capture.py: the prefilled cache holds {cache.get_seq_length()} tokens, not --seq {a.seq}")

    def call():
        out = model(token, past_key_values=cache, use_cache=True)
        restore_cache(cache, prefilled)
        return out
    return call


def cache_state(cache):
    """A shallow snapshot of a transformers cache: its attributes and each of its layers'
    (the tensors themselves, not copies; lists copied), which `restore_cache` puts back.
    Covers both layouts transformers has used: per-layer objects (`cache.layers`, each
    with `keys` and `values`) and the older `key_cache`/`value_cache` lists."""
    layers = list(getattr(cache, "layers", None) or [])
    attrs = {k: (list(v) if isinstance(v, list) else v) for k, v in vars(cache).items()}
    return attrs, layers, [dict(vars(layer)) for layer in layers]


def restore_cache(cache, state):
    attrs, layers, layer_attrs = state
    for layer, saved in zip(layers, layer_attrs):
        layer.__dict__.clear()
        layer.__dict__.update(saved)
    for k, v in attrs.items():
        setattr(cache, k, list(v) if isinstance(v, list) else v)


def time_runs(fn, warmup=10, runs=50):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000.0)
    return {"median_us": statistics.median(times), "min_us": min(times), "max_us": max(times), "runs": runs}


def energy(fn, seconds=2.0):
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    except Exception as e:  # NVML absent: timing only
        return {"energy_error": repr(e)}
    torch.cuda.synchronize()
    e0, t0, n = pynvml.nvmlDeviceGetTotalEnergyConsumption(h), time.time(), 0
    while time.time() - t0 < seconds:
        fn()
        n += 1
        if n % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    e1, t1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h), time.time()
    return {"energy_per_run_mj": (e1 - e0) / n, "energy_runs": n, "energy_window_s": t1 - t0,
            "avg_power_w": (e1 - e0) / 1000.0 / (t1 - t0)}


def back_to_back(fn, per_call_us, seconds=2.0, repeats=3):
    """Time and energy per call of `fn` run back to back, as kc times its replays.

    Time per call: CUDA events around `repeats` windows of calls, / calls. Energy per call:
    each window runs from one tick of NVML's energy counter (it advances about every 100 ms)
    to the first tick at least `seconds` later, observed while the GPU is busy, and divides
    the counter's difference by the calls *completed* between the two ticks, counted with
    an event after every small batch (about 2 ms of GPU work) and polled every millisecond,
    as kc's feeder counts its launches. Until session 17 a window began with the GPU idle
    and divided by every call enqueued until its closing tick was seen, the batches still
    in flight then included (20-60 ms of work in a 2 s window): kc's graph of the model then
    read a median 2.3 % more power than the model (21 models, session 16), and 0.2 % with
    this count (23 measurements, session 17; docs/MEASUREMENTS.md). Returns the medians, the
    spread of the windows, and the GPU's temperature and SM clock over them."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        counter = lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        temperature = lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
        sm_clock = lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    except Exception:  # NVML absent: time only
        counter = temperature = sm_clock = None
    batch = max(1, int(2_000 / max(per_call_us, 1.0)))  # about 2 ms of GPU work
    # At least 50 ms and three batches queued. With about 20 ms (two calls of Qwen2's 11 ms
    # training step, session 17's first count of completed calls) the model read 3.5 %
    # slower than in session 16 while kc's graph of it did not change, as if the GPU waited
    # for the host now and then; a deeper queue costs the count nothing.
    in_flight_max = max(3, int(50_000 / (batch * max(per_call_us, 1.0))) + 1)
    times, energies, temperatures, clocks = [], [], [], []
    for _ in range(repeats):
        torch.cuda.synchronize()
        in_flight, free = [], [torch.cuda.Event() for _ in range(in_flight_max + 1)]
        st = {"done": 0, "launched": 0}

        def pump():
            # Retires finished batches and tops the queue up; returns calls completed.
            while in_flight and in_flight[0].query():
                free.append(in_flight.pop(0))
                st["done"] += batch
            while len(in_flight) < in_flight_max:
                for _ in range(batch):
                    fn()
                ev = free.pop()
                ev.record()
                in_flight.append(ev)
                st["launched"] += batch
            return st["done"]

        s = torch.cuda.Event(enable_timing=True)
        s.record()
        t0 = time.time()
        if counter:
            # The window starts at a tick seen while the GPU is busy.
            first = counter()
            while True:
                pump()
                time.sleep(0.001)
                e0 = counter()
                if e0 != first:
                    d0 = pump()
                    break
                if time.time() - t0 > 5.0:
                    raise RuntimeError("the NVML energy counter did not change in 5 s")
            tw, last, sm = time.time(), e0, []
            while True:
                pump()
                time.sleep(0.001)
                e1 = counter()
                if e1 == last:
                    if time.time() - tw > seconds + 5.0:
                        raise RuntimeError("the NVML energy counter stopped changing")
                    continue
                last = e1
                sm.append(sm_clock())
                if time.time() - tw >= seconds:
                    d1 = pump()
                    break
            energies.append((e1 - e0) / max(d1 - d0, 1))
            temperatures.append(temperature())
            clocks.append(statistics.median(sm) if sm else None)
        else:
            while time.time() - t0 < seconds:
                pump()
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000.0 / st["launched"])
    med = statistics.median(times)
    out = {"back_to_back_us": med, "back_to_back_calls_per_window": st["launched"],
           "back_to_back_windows": repeats,
           "back_to_back_spread_pct": (max(times) - min(times)) / med * 100.0}
    if energies:
        em = statistics.median(energies)
        # The GPU's temperature at each window's end: a hotter chip leaks more, so energies
        # measured minutes apart compare only at like temperatures.
        out.update({"back_to_back_energy_per_run_mj": em,
                    "back_to_back_energy_spread_pct": (max(energies) - min(energies)) / em * 100.0,
                    "back_to_back_energy_windows_mj": energies,
                    "back_to_back_energy_counts": "completed",
                    "back_to_back_temperature_c": temperatures,
                    "back_to_back_sm_clock_mhz": clocks})
    return out


def profile(fn, name, a, with_et=True):
    """Profiles `a.iters` calls of `fn` (after one warm-up call) into DIR/NAME.pt.trace.json.gz
    and, with `with_et`, an Execution Trace of the same calls; returns both paths (gzipped)."""
    trace = os.path.join(a.out, f"{name}.pt.trace.json")
    et_path = os.path.join(a.out, f"{name}.et.json")
    et = torch.profiler.ExecutionTraceObserver().register_callback(et_path) if with_et else None
    # The trace is exported when the active cycle ends (the profiler clears its events at
    # the end of each cycle, so exporting after the `with` block would find none).
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        record_shapes=True,
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=a.iters, repeat=1),
        execution_trace_observer=et,
        on_trace_ready=lambda prof: prof.export_chrome_trace(trace),
    ) as prof:
        for _ in range(1 + a.iters):
            fn()
            torch.cuda.synchronize()
            prof.step()
    trace_gz = gzip_file(trace)
    et_gz = gzip_file(et_path) if with_et and os.path.exists(et_path) else None
    return trace_gz, et_gz


# What a values file may hold: tensors larger than this are left out, and recording stops
# at the total (kc reads at most 512 MiB).
VALUES_TENSOR_MAX_BYTES = 16 << 20
VALUES_TOTAL_MAX_BYTES = 256 << 20
# Integer dtypes as the Execution Trace names them, and as the values file names them.
VALUE_DTYPES = {"long int": ("int64", 8), "int": ("int32", 4), "short int": ("int16", 2),
                "signed char": ("int8", 1), "unsigned char": ("uint8", 1)}


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def et_attr(node, key):
    for a in node.get("attrs", []):
        if a.get("name") == key:
            return a.get("value")
    return None


def et_ops(doc):
    """An Execution Trace's op nodes in id (call) order, without its root, thread and
    ProfilerStep nodes."""
    return [n for n in sorted(doc["nodes"], key=lambda n: n["id"])
            if not n["name"].startswith(("[pytorch|profiler", "ProfilerStep#"))]


def et_iterations(doc):
    """An Execution Trace's op nodes per profiled iteration and thread, each in id (call)
    order: {(iteration, thread): nodes}. A node belongs to the last ProfilerStep#N entered
    before it (ids count entries), so the backward pass, which runs on autograd's thread
    under no ProfilerStep, stays with its iteration; iteration 0 when there are no markers.
    Threads are kept apart: their calls interleave otherwise from run to run."""
    starts = sorted(n["id"] for n in doc["nodes"] if n["name"].startswith("ProfilerStep#"))
    import bisect
    groups = {}
    for n in et_ops(doc):
        it = bisect.bisect_left(starts, n["id"])
        groups.setdefault((it, et_attr(n, "tid")), []).append(n)
    return groups


def tensor_position(node, tid):
    """(argument position, element within a tensor list or None) of a node's `tid`-th input
    tensor, counting tensors as the Execution Trace observer numbers its dumps."""
    k = 0
    for i, ty in enumerate(node["inputs"]["types"]):
        if ty.startswith("Tensor("):
            if k == tid:
                return i, None
            k += 1
        elif ty.startswith("GenericList["):
            e = 0
            for inner in ty[len("GenericList["):-1].split(","):
                if inner.startswith("Tensor("):
                    if k == tid:
                        return i, e
                    k += 1
                    e += 1
    return None


def input_field(node, field, pos, elem):
    """A node's input `field` (shapes, strides, types, values) at a position, or at an element
    of the tensor list there (a list's types are one string: "GenericList[Tensor(..),..]")."""
    v = node["inputs"][field][pos]
    if elem is None:
        return v
    if field == "types":
        return v[len("GenericList["):-1].split(",")[elem]
    return v[elem]


def bool_recorder():
    """A dispatch mode that keeps the boolean input tensors of every op it sees (masks: the
    Execution Trace observer saves integer tensors only), by schema position: a list of
    (op name, {(position, element): (shape, bytes)}) in call order."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class BoolRecorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            found = {}
            for i, arg in enumerate(func._schema.arguments):
                v = args[i] if i < len(args) else kwargs.get(arg.name)
                items = [(None, v)] if isinstance(v, torch.Tensor) else (
                    [(k, t) for k, t in enumerate(x for x in v if isinstance(x, torch.Tensor))]
                    if isinstance(v, (list, tuple)) else [])
                for elem, t in items:
                    if t.dtype == torch.bool and 0 < t.numel() <= VALUES_TENSOR_MAX_BYTES:
                        found[(i, elem)] = (list(t.shape), bytes(t.detach().reshape(-1).cpu().tolist()))
            if found:
                self.calls.append((func._schema.name, found))
            return func(*args, **kwargs)
    return BoolRecorder()


def record_values(step, name, a, et_gz):
    """Runs `step` once more under an Execution Trace observer that saves every integer input
    tensor of the ops the profiled Execution Trace holds, and once more under a dispatch mode
    that keeps the boolean ones, and writes them into DIR/NAME.values.bin keyed by the
    profiled trace's node ids: the observer's run is matched to each profiled iteration by op
    name, in call order, each thread's apart; the dispatch mode's calls by op name and shapes.
    Two runs, because under a dispatch mode the observer records every op twice (the call
    and, below a PythonDispatchMode node, the call again) and the mode's own copies, which
    no longer line up with the profiled iterations (Swin-T: half its masks were lost so).
    Returns what it wrote, for reference.json, or why it wrote nothing."""
    import tempfile
    et1 = load_json(et_gz)
    names = sorted({n["name"] for n in et1["nodes"] if n["name"].startswith("aten::")})
    tmp = tempfile.mkdtemp(prefix="kc_values_")
    et2_path = os.path.join(tmp, "values.et.json")
    resources = os.path.join(tmp, "values.et_resources")
    os.makedirs(resources, exist_ok=True)
    key = "ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA"
    os.environ[key] = ",".join(names)
    try:
        obs = torch.profiler.ExecutionTraceObserver().register_callback(et2_path)
        obs.start()
        step()
        torch.cuda.synchronize()
        obs.stop()
        obs.unregister_callback()
    finally:
        os.environ.pop(key, None)
    recorder = bool_recorder()
    with recorder:
        step()
    torch.cuda.synchronize()
    if not os.path.exists(et2_path) and os.path.exists(et2_path + ".gz"):
        et2_path += ".gz"
    et2 = load_json(et2_path)
    if os.environ.get("KC_KEEP_VALUES_ET"):
        # For looking into a run whose nodes did not match the profiled ones.
        with gzip.open(os.path.join(a.out, f"{name}.values_run.et.json.gz"), "wt") as f:
            json.dump(et2, f)
    bools = bools_by_iteration(recorder.calls, et1)
    out = write_values(et1, et2, resources, os.path.basename(et_gz),
                       os.path.join(a.out, f"{name}.values.bin"), bools=bools)
    # How many calls with boolean inputs the dispatch mode saw (one iteration), and how many
    # profiled nodes took their values (the rest keep kc's drawn masks).
    out["boolean_calls"] = {"seen": len(recorder.calls), "nodes_given": len(bools),
                            "ops": sorted({n for n, _ in recorder.calls})[:8]}
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def bools_by_iteration(calls, et1):
    """The dispatch mode's boolean inputs (one iteration's calls) keyed by the profiled ET's
    node ids, matched to every profiled iteration and thread apart (`bools_by_node`)."""
    out = {}
    for group in et_iterations(et1).values():
        out.update(bools_by_node(calls, group))
    return out


def bools_by_node(calls, nodes):
    """The dispatch mode's boolean inputs, keyed by the id of the node (of `nodes`, one
    iteration's in call order) of the same call: the next node of that op name whose
    recorded shapes at those positions agree (the mode sees the ops Python dispatches, the
    observer also those they call, which take the same tensors: see `share_with_callees`).
    A call no node matches is skipped and the search goes on from the last match."""
    children = {}
    for n in nodes:
        children.setdefault(n.get("ctrl_deps"), []).append(n)

    def tensor_id(n, p, e):
        v = n["inputs"]["values"][p]
        return tuple(v if e is None else v[e]) if isinstance(v, list) else None

    def share_with_callees(n, found):
        # The ops an op calls receive the same tensors (masked_fill -> masked_fill_): they
        # take the values where an input is the same tensor (the trace's tensor ids).
        ids = {}
        for (p, e), item in found.items():
            try:
                ids[tensor_id(n, p, e)] = item
            except (IndexError, KeyError, TypeError):
                pass
        ids.pop(None, None)
        todo = list(children.get(n["id"], []))
        while todo:
            c = todo.pop()
            todo.extend(children.get(c["id"], []))
            got = {}
            for p, ty in enumerate(c["inputs"].get("types", [])):
                elems = [None] if ty.startswith("Tensor(") else (
                    range(ty.count("Tensor(")) if ty.startswith("GenericList[") else [])
                for e in elems:
                    try:
                        item = ids.get(tensor_id(c, p, e))
                    except (IndexError, KeyError, TypeError):
                        item = None
                    if item is not None:
                        got[(p, e)] = item
            if got:
                out.setdefault(c["id"], {}).update(got)

    # Each call is looked for from the last match to the end of the iteration.
    out, j = {}, 0
    for name, found in calls:
        for k in range(j, len(nodes)):
            n = nodes[k]
            if n["name"] != name:
                continue
            try:
                same = all(input_field(n, "shapes", p, e) == shape for (p, e), (shape, _) in found.items())
            except (IndexError, KeyError, TypeError):
                same = False
            if same:
                out.setdefault(n["id"], {}).update(found)
                share_with_callees(n, found)
                j = k + 1
                break
    return out


def aligned_nodes(nodes1, nodes2):
    """{index in nodes1: node of nodes2} for the nodes of two runs of the same step that are
    the same call: the longest matching blocks of their op names (difflib), so that ops only
    one run has (a CUDA graph capture's own allocations and fills before the step) shift
    nothing after them. A greedy look-ahead matched the capture's leading `empty`s ahead
    into the step and lost 705 of Qwen3-MoE's 759 nodes so."""
    import difflib
    names1 = [n["name"] for n in nodes1]
    names2 = [n["name"] for n in nodes2]
    out = {}
    for block in difflib.SequenceMatcher(None, names1, names2, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            out[block.a + k] = nodes2[block.b + k]
    return out


def write_values(et1, et2, resources, et_name, path, bools=None):
    """Writes the values file at `path`: the integer input tensors ET2's run saved into
    `resources` (nid_N_tid_K.dat), keyed by the node ids of the profiled ET1 whose nodes they
    match (per iteration, by op name in call order), and the boolean ones in `bools` (already
    keyed by ET1 node id). Returns what it wrote."""
    import hashlib
    bools = bools or {}
    dumps = {}
    for f in os.listdir(resources):
        parts = f[:-4].split("_") if f.endswith(".dat") else []
        if len(parts) == 4 and parts[0] == "nid" and parts[2] == "tid":
            dumps.setdefault(int(parts[1]), []).append((int(parts[3]), os.path.join(resources, f)))

    # The values run is one iteration: its nodes per thread.
    run2_of = {tid: g for (_, tid), g in et_iterations(et2).items()}
    entries, blobs, offsets = [], bytearray(), {}
    left_out = {"larger than 16 MiB": 0, "not contiguous": 0, "other shape than profiled": 0,
                "unmatched": 0, "over the total": 0}

    def add(n1, pos, elem, dtype, shape, data):
        # One tensor for the profiled node n1, when n1 recorded the same shape there; equal
        # contents are stored once.
        try:
            if input_field(n1, "shapes", pos, elem) != shape:
                raise ValueError
        except (IndexError, KeyError, TypeError, ValueError):
            left_out["other shape than profiled"] += 1
            return
        digest = hashlib.sha1(data).digest()
        if digest not in offsets:
            if len(blobs) + len(data) > VALUES_TOTAL_MAX_BYTES:
                left_out["over the total"] += 1
                return
            offsets[digest] = len(blobs)
            blobs.extend(data)
        entries.append({"node": n1["id"], "input": pos, "element": elem, "dtype": dtype,
                        "shape": shape, "offset": offsets[digest], "bytes": len(data)})

    # What the matching saw: each run's op nodes per thread, and the first profiled nodes
    # that found no node of their name in the values run's next 64.
    seen = {"profiled_ops_per_thread": {str(tid): len(g) for (_, tid), g in et_iterations(et1).items()},
            "values_run_ops_per_thread": {str(tid): len(g) for tid, g in run2_of.items()},
            "first_unmatched": []}
    for (_, tid), group in et_iterations(et1).items():
        run2 = run2_of.get(tid, [])
        partner = aligned_nodes(group, run2)
        for k1, n1 in enumerate(group):
            found = bools.get(n1["id"], {})
            for pos, elem in sorted(found, key=lambda k: (k[0], -1 if k[1] is None else k[1])):
                shape, data = found[(pos, elem)]
                add(n1, pos, elem, "bool", shape, data)
            n2 = partner.get(k1)
            if n2 is None:
                left_out["unmatched"] += 1
                if len(seen["first_unmatched"]) < 4:
                    seen["first_unmatched"].append({"node": n1["id"], "name": n1["name"], "thread": tid})
                continue
            for tid, dat in sorted(dumps.get(n2["id"], [])):
                where = tensor_position(n2, tid)
                if where is None:
                    continue
                pos, elem = where
                ty = input_field(n2, "types", pos, elem)[len("Tensor("):-1]
                if ty not in VALUE_DTYPES:
                    continue
                dtype, size = VALUE_DTYPES[ty]
                shape = input_field(n2, "shapes", pos, elem)
                strides = input_field(n2, "strides", pos, elem)
                numel, want = 1, []
                for d in reversed(shape):
                    want.insert(0, numel)
                    numel *= d
                if any(d > 1 and s != w for d, s, w in zip(shape, strides or want, want)):
                    left_out["not contiguous"] += 1
                    continue
                if numel * size > VALUES_TENSOR_MAX_BYTES:
                    left_out["larger than 16 MiB"] += 1
                    continue
                with open(dat, "rb") as f:
                    data = f.read()
                if len(data) == numel * size:
                    add(n1, pos, elem, dtype, shape, data)
    if not entries:
        return {"error": "no integer or boolean input tensor was recorded", "left_out": left_out,
                "matching": seen}
    header = json.dumps({"format": "kc values 1", "execution_trace": et_name,
                         "tensors": entries}).encode()
    with open(path, "wb") as f:
        f.write(b"KCVALUE1")
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        f.write(blobs)
    return {"file": os.path.basename(path), "tensors": len(entries), "distinct_bytes": len(blobs),
            "left_out": left_out, "matching": seen}


class capturing_as_seen_by_python:
    """Makes Python code see a stream capture in progress while the eager twin is profiled.
    Model code takes another path under capture (Hugging Face builds explicit attention masks
    instead of its data-dependent shortcuts, which would synchronise): the twin must run the
    step the graph holds, kernel for kernel, or the graph's extra kernels find no op."""

    def __enter__(self):
        self.saved = torch.cuda.is_current_stream_capturing
        torch.cuda.is_current_stream_capturing = lambda: True
        self.graphs_saved = torch.cuda.graphs.is_current_stream_capturing
        torch.cuda.graphs.is_current_stream_capturing = lambda: True

    def __exit__(self, *exc):
        torch.cuda.is_current_stream_capturing = self.saved
        torch.cuda.graphs.is_current_stream_capturing = self.graphs_saved
        return False


def warm_up_for_capture(step):
    """Three calls of `step` on a side stream, as PyTorch asks before a capture."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)


def capture_graph(step):
    """`step` captured in one CUDA graph (after warm-ups on a side stream, as PyTorch asks),
    and the output the capture left (the tensors each replay writes)."""
    warm_up_for_capture(step)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step()
    return g, out


# A replay matches its eager step where its output differs from the eager one's by at most
# this share of the eager output, root mean square over root mean square. Not bit for bit,
# and not by the largest difference alone: a mixture of experts sums its experts' outputs
# with atomics (index_add_) in an order that varies run to run, and a graph whose kernels
# round apart from the eager step's may differ at single elements by a larger share of the
# largest value than over the whole output. A graph that reads memory its capture freed
# differs at the scale of the output itself (the decode graphs before session 49: 132 % of
# its largest value). BERT's 12-layer bf16 graph (session 50) differs by 1.3 % in root mean
# square and 1.4 % at most: refused either way; whether that is rounding over its layers
# or other data is not measured. The largest difference is recorded beside it.
REPLAY_MATCH_RMS = 1e-2


def output_tensor(out):
    """The tensor a step's output leads with (a language model's logits, a classifier's
    scores), or None where the step returns none (a training step)."""
    if isinstance(out, torch.Tensor):
        return out
    logits = getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    return None


def finite_or_none(x):
    return x if math.isfinite(x) else None


def replay_against_eager(g, static_out, step):
    """Whether a replay of the step's CUDA graph computes what the step computes eagerly:
    the graph's output after one replay against one eager step's (`replay_verdict`: judged
    by their difference's root mean square, the largest difference recorded). A graph that reads memory its capture
    freed (the decode steps before session 49) computes something else, and its time is
    then not the model's. Not made for a training step: it returns nothing, and changes its
    weights every call. A check that fails says why and leaves the measurement standing."""
    try:
        return compare_replay(g, static_out, step)
    except Exception as e:  # the graph's figures stand without the check
        return {"checked": False, "why": f"the check failed: {e!r}"}


def compare_replay(g, static_out, step):
    ref = output_tensor(static_out)
    if ref is None:
        return {"checked": False, "why": "the step returns no output (a training step changes its weights every call)"}
    g.replay()
    torch.cuda.synchronize()
    replayed = ref.detach().float().clone()
    eager = output_tensor(step())
    if eager is None or eager.shape != replayed.shape:
        return {"checked": False, "why": "the eager step's output is not the replay's shape"}
    eager = eager.detach().float()
    finite = bool(torch.isfinite(replayed).all().item() and torch.isfinite(eager).all().item())
    d = replayed - eager
    return replay_verdict(d.abs().max().item(), eager.abs().max().item(),
                          d.square().mean().sqrt().item(), eager.square().mean().sqrt().item(), finite)


def replay_verdict(diff_max, eager_max, diff_rms, eager_rms, finite):
    """The check's record from its figures: the largest difference between the replay's and
    the eager step's outputs and the eager output's largest magnitude, their root mean
    squares, and whether both outputs were finite. It matches where both are finite and the
    difference's root mean square is at most REPLAY_MATCH_RMS of the eager output's."""
    rel = diff_max / eager_max if eager_max > 0 else diff_max
    rel_rms = diff_rms / eager_rms if eager_rms > 0 else diff_rms
    return {"checked": True, "max_abs_diff": finite_or_none(diff_max), "eager_max_abs": finite_or_none(eager_max),
            "relative": finite_or_none(rel), "relative_rms": finite_or_none(rel_rms), "finite": finite,
            "matches": bool(finite and rel_rms <= REPLAY_MATCH_RMS), "tolerance_relative_rms": REPLAY_MATCH_RMS}


def profile_capture(step, name, a):
    """Captures `step` into one CUDA graph while the profiler and an Execution Trace record
    the capture: the ops with their shapes and tensors, and every launch in capture order
    (no kernel runs during a capture, so the trace holds the runtime calls without GPU
    activities). `kc ingest GRAPH --capture CAPTURE --shapes CAPTURE_ET` links each kernel
    the graph replays to the op that launched it here. Returns the graph (the one whose
    replays are then profiled), the output the capture left, and the trace and ET paths
    (gzipped; the ET may be None)."""
    warm_up_for_capture(step)
    torch.cuda.synchronize()
    trace = os.path.join(a.out, f"{name}.pt.trace.json")
    et_path = os.path.join(a.out, f"{name}.et.json")
    et = torch.profiler.ExecutionTraceObserver().register_callback(et_path)
    g = torch.cuda.CUDAGraph()
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        record_shapes=True,
        execution_trace_observer=et,
    ) as prof:
        with torch.cuda.graph(g):
            out = step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace)
    trace_gz = gzip_file(trace)
    et_gz = gzip_file(et_path) if os.path.exists(et_path) else None
    return g, out, trace_gz, et_gz


def cuda_graph(step, keep=None):
    """Times `step` captured in one CUDA graph, or returns why it cannot be captured. With
    `keep` (a path ending .json), the profiled replays of the graph are kept there, gzipped
    (`replay_trace`): the model's own graph kernel by kernel, which `kc report` sets beside
    kc's graph."""
    try:
        g, out = capture_graph(step)
        r = time_runs(g.replay)
        r.update(energy(g.replay))
        r.update(back_to_back(g.replay, r["median_us"]))
        r.update(graph_kernels(g.replay, keep=keep))
        r["replay_against_eager"] = replay_against_eager(g, out, step)
        return r
    except Exception as e:
        return {"error": repr(e)}


def graph_kernels(replay, iters=5, keep=None):
    """What the GPU ran inside the model's own CUDA graph: kernels (and copies/fills) per
    replay and the sum of their durations, from a profiler trace of `iters` replays; the
    rest of a replay's time is launch and gap overhead between them. With `keep`, that
    trace is kept there (gzipped) and named in the result (`replay_trace`)."""
    import tempfile
    try:
        path = keep or os.path.join(tempfile.mkdtemp(), "graph_replay.json")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(iters):
                replay()
            torch.cuda.synchronize()
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
        r = replay_activities(events, iters)
        if keep:
            r["replay_trace"] = os.path.basename(gzip_file(path))
        return r
    except Exception as e:  # the profiler is optional here: times and energy stand alone
        return {"kernel_error": repr(e)}


def replay_activities(events, iters):
    """Per replay, from a profiler trace's events of `iters` replays: the GPU's activities
    (kernels, copies and fills: `kernels_per_replay`, the name older references use), the
    kernels alone (`kernels_only_per_replay`, since session 31: set beside the traced
    step's kernels, a count that copies and fills, which a trace links otherwise, do not
    blur) and the sum of the activities' durations."""
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    return {"kernels_per_replay": len(gpu) / iters,
            "kernels_only_per_replay": sum(e.get("cat") == "kernel" for e in gpu) / iters,
            "kernel_time_us": sum(float(e.get("dur", 0)) for e in gpu) / iters,
            "kernel_profiled_replays": iters}


def merge_reference(path, env, how, name, entry):
    """Adds `entry` under `name` to the reference file at `path`, keeping the entries of
    earlier captures into the same folder. Returns the name of the entry it replaced, if any."""
    ref = {"env": env, "how": how, "results": {}}
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        ref["results"] = dict(old.get("results", {}))
    replaced = name if name in ref["results"] else None
    ref["results"][name] = dict(entry, env=env)
    write_json(path, ref)
    return replaced


def write_json(path, doc):
    """Writes `doc` to `path` through a temporary file, so a reader never sees half of it."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def remeasure(step, name, a):
    """Measures the model again as `back_to_back` does, without profiling, and appends the
    figures to its entry in DIR/reference.json (`remeasured`, under `cuda_graph` where the
    capture measured the model's CUDA graph, else `eager`). Run after kc has measured its replay, it brackets kc's
    measurement in time, so a comparison can say whether the model's own energy moved
    with the GPU's state (its temperature) between the two."""
    path = os.path.join(a.out, "reference.json")
    try:
        with open(path) as f:
            ref = json.load(f)
        entry = ref["results"][name]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"capture.py: --remeasure needs {path} with an entry {name!r} from an earlier capture ({e!r})")
    # The model's CUDA graph is what kc's replay is compared with wherever it could be
    # captured, whether or not the trace was profiled from it; else the eager step.
    key, fn = "eager", step
    if "error" not in entry.get("cuda_graph", {"error": "not measured"}):
        try:
            key, fn = "cuda_graph", capture_graph(step)[0].replay
        except Exception as e:  # measured at capture time, not now: the eager step stands in
            print(f"capture.py: --remeasure: the CUDA graph failed to capture ({e!r}); measuring eager", file=sys.stderr)
    once = time_runs(fn, runs=20)
    r = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "median_us": once["median_us"]}
    r.update(back_to_back(fn, once["median_us"]))
    entry.setdefault(key, {}).setdefault("remeasured", []).append(r)
    write_json(path, ref)
    print(json.dumps(r))


def profile_replay(step, a):
    """Runs the step once inside a profiler range (cudaProfilerStart/Stop) and nothing
    else: its CUDA graph with --cuda-graph (after three replays), else the eager step. An
    external profiler started with `--profile-from-start off` (Nsight Compute, Nsight
    Systems' cudaProfilerApi range) then records one iteration and none of the setup, as
    `kc exec --profile-replay` does for kc's replay."""
    fn = step
    if a.cuda_graph:
        fn = capture_graph(step)[0].replay
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def gzip_file(path):
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(path)
    return path + ".gz"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True,
                   help="qwen2, mistral, llama, gpt2, bloom, mixtral, qwen3_moe, t5 (Hugging Face config) or a "
                        "torchvision model name (resnet50, vit_b_16, swin_t, convnext_tiny, ...)")
    p.add_argument("--name", help="file name stem (default: derived from the model and shape)")
    for flag in KEYS:
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, type=int,
                       help=f"override the config's {' / '.join(KEYS[flag])}")
    p.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    p.add_argument("--seq", type=int, default=128, help="sequence length of LM inputs (default 128)")
    p.add_argument("--image", type=int, default=224, help="image side of torchvision inputs (default 224)")
    p.add_argument("--frames", type=int, default=16,
                   help="frames per clip of torchvision's video models (r3d_18, swin3d_t, ...; default 16)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp16", help="parameter and input dtype")
    p.add_argument("--iters", type=int, default=3, help="profiled iterations (default 3)")
    p.add_argument("--mode", choices=["inference", "train", "decode"], default="inference",
                   help="a forward pass, a training step with AdamW, or (Hugging Face models) one "
                        "decode step after a prefilled context of --seq tokens, static KV cache")
    p.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="adamw",
                   help="--mode train: the optimizer step (default adamw: PyTorch's default foreach "
                        "on CUDA; adamw-fused / adam-fused: one fused kernel; sgd-momentum)")
    p.add_argument("--tf32", action="store_true",
                   help="fp32 matmuls and convolutions in TF32 (torch.backends.*.allow_tf32), as "
                        "fp32 models are commonly run; recorded in reference.json's math_modes")
    p.add_argument("--channels-last", action="store_true",
                   help="torchvision models: weights and input in channels-last memory format")
    p.add_argument("--compile", action="store_true",
                   help="run the model under torch.compile (Inductor); its cache of Triton kernels is "
                        "kept beside the trace as NAME.inductor_cache.tar.gz")
    p.add_argument("--cuda-graph", action="store_true",
                   help="profile replays of the step captured in one CUDA graph (as a serving loop runs "
                        "it), and also write NAME_capture.* (the profiled capture of that graph, with its "
                        "Execution Trace: `kc ingest --capture`) and NAME_eager.* (the eager trace of the "
                        "same step: `kc ingest --eager`)")
    p.add_argument("--no-values", action="store_true",
                   help="do not record the values of the step's integer tensors (NAME.values.bin)")
    p.add_argument("--remeasure", action="store_true",
                   help="profile nothing: measure the model back to back again (its CUDA graph where the "
                        "capture could measure one, else eager) and append the figures to its entry in OUT/reference.json "
                        "(`remeasured`), e.g. after kc measured its replay, to bracket it in time")
    p.add_argument("--profile-replay", action="store_true",
                   help="profile nothing and write nothing: run one iteration (the CUDA graph's replay with "
                        "--cuda-graph) inside a profiler range, for Nsight Compute or Nsight Systems started "
                        "with --profile-from-start off (as `kc exec --profile-replay`)")
    p.add_argument("--out", required=True, help="folder for the trace, Execution Trace and reference.json")
    a = p.parse_args()
    if a.compile and a.mode == "decode":
        sys.exit("capture.py: --compile with --mode decode is not supported (the KV cache's graph breaks)")
    cache_dir = None
    if a.compile:
        # A fresh cache per capture, set before torch is imported: it then holds exactly the
        # kernels of this model, and nothing another run compiled.
        import tempfile
        cache_dir = tempfile.mkdtemp(prefix="kc_inductor_")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    note = eager_hf_note(a)
    if note:
        print(note, file=sys.stderr)
    global torch
    try:
        import torch as torch_module
    except ImportError:
        sys.exit("capture.py: needs PyTorch with CUDA on this machine (see the requirements in --help)")
    torch = torch_module
    if not torch.cuda.is_available():
        sys.exit("capture.py: no CUDA device")
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    if a.tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    step, desc = build(a)
    size = f"s{a.seq}" if a.model in HF else f"i{a.image}"
    suffix = "_compiled" if a.compile else "_graphreplay" if a.cuda_graph else ""
    name = a.name or f"{a.model}{'' if a.layers is None else f'_{a.layers}l'}_{a.mode}_b{a.batch}_{size}_{a.dtype}{suffix}"

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    if a.profile_replay:
        profile_replay(step, a)
        return
    if a.remeasure:
        remeasure(step, name, a)
        return
    extra = {}
    if a.cuda_graph:
        # The eager twin first (the same step, eagerly), then the graph replays.
        twin = name[: -len("_graphreplay")] if name.endswith("_graphreplay") else name
        with capturing_as_seen_by_python():
            twin_gz, twin_et = profile(step, f"{twin}_eager", a)
        # The graph whose replays are profiled is the one whose capture is profiled.
        g, cap_out, cap_gz, cap_et = profile_capture(step, f"{twin}_capture", a)
        # The values the captured program's integer tensors hold (indices, routing): from
        # one eager run of the step as the capture sees it, keyed by the capture ET's nodes.
        if cap_et and not a.no_values:
            try:
                with capturing_as_seen_by_python():
                    extra["values"] = record_values(step, f"{twin}_capture", a, cap_et)
            except Exception as e:  # the capture and its ET stand without the values
                extra["values"] = {"error": repr(e)}
        trace_gz, et_gz = profile(g.replay, name, a, with_et=False)
        # Whether the profiled graph computes what its eager step does (the values above
        # come from an eager run, so a graph that does not is replayed on other data).
        extra["replay_against_eager"] = replay_against_eager(g, cap_out, step)
        extra.update({"eager_twin": os.path.basename(twin_gz), "eager_twin_execution_trace": twin_et and os.path.basename(twin_et),
                 "capture_trace": os.path.basename(cap_gz),
                 "capture_execution_trace": cap_et and os.path.basename(cap_et),
                 "trace_holds": "CUDA-graph replays of the step"})
    else:
        trace_gz, et_gz = profile(step, name, a)
        if et_gz and not a.no_values:
            try:
                extra["values"] = record_values(step, name, a, et_gz)
            except Exception as e:  # the trace and its ET stand without the values
                extra["values"] = {"error": repr(e)}
    if cache_dir:
        import tarfile
        cache_tar = os.path.join(a.out, f"{name}.inductor_cache.tar.gz")
        with tarfile.open(cache_tar, "w:gz") as t:
            t.add(cache_dir, arcname="inductor_cache")
        extra["inductor_cache"] = os.path.basename(cache_tar)

    eager = time_runs(step)
    eager.update(energy(step))
    eager.update(back_to_back(step, eager["median_us"]))
    graph = cuda_graph(step, keep=os.path.join(a.out, f"{name}.graph_replays.trace.json"))
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
           "cudnn": torch.backends.cudnn.version()}
    # The math modes the trace cannot say: what the model's kernels were chosen under.
    extra["math_modes"] = {
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "matmul_allow_fp16_reduced_precision_reduction":
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul_allow_bf16_reduced_precision_reduction":
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        # cuBLAS(Lt)'s workspaces steer which algorithm (split, stream-K) a GEMM gets:
        # kc's GEMM back end reads the same two variables (unset: PyTorch's defaults).
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "cublaslt_workspace_size_kib": os.environ.get("CUBLASLT_WORKSPACE_SIZE"),
    }
    how = ("capture.py: eager = CUDA-event time of one iteration, median/min/max over 50 runs after 10 "
           "warm-ups; cuda_graph = the same for the iteration captured in one CUDA graph; "
           "energy_per_run_mj = NVML total-energy delta over a >= 2 s loop / runs; cuda_graph.kernel_time_us = "
           "the sum of the GPU's kernel, copy and fill durations per graph replay (profiler, 5 replays; those replays "
           "kept as cuda_graph.replay_trace); "
           "back_to_back_us / back_to_back_energy_per_run_mj = calls run back to back over 3 windows of >= 2 s, "
           "each starting and ending at a tick of NVML's energy counter (median; spread = (max-min)/median), "
           "the like-with-like figure for kc's replay time and energy. Each trace holds "
           "`profiled_iterations` profiled iterations (CPU+CUDA, record_shapes=True). Random weights.")
    entry = {"model": desc, "mode": a.mode, "batch": a.batch, "seq": a.seq, "dtype": a.dtype,
             "eager": eager, "cuda_graph": graph, "profiled_iterations": a.iters,
             "trace": os.path.basename(trace_gz),
             "execution_trace": et_gz and os.path.basename(et_gz), **extra}
    replaced = merge_reference(os.path.join(a.out, "reference.json"), env, how, name, entry)
    if replaced:
        print(f"capture.py: replaced the earlier reference entry {replaced!r}", file=sys.stderr)
    print(json.dumps(entry, indent=1))
    print(trace_gz)


if __name__ == "__main__":
    main()
