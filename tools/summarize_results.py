#!/usr/bin/env python3
"""Markdown tables from kc exec results, as docs/MEASUREMENTS.md shows them.

    summarize_results.py RESULTS_DIR [../shared/traces/h100/reference.json]

Reads TRACE.graph.json, TRACE.iso.json (and TRACE.iso.cold.json when present) for the
H100 traces, and prints: per-GEMM isolated time against traced time, graph-mode time
against the traced time of the replayed steps, energy repeatability, and the stream
and overhead figures.
"""
import json, os, statistics, sys

TRACES = ["bloom560m_seq5", "gpt2_train_bf16", "llama7b8l_decode", "resnet50_b32", "multistream_gemm_bf16"]

def load(d, name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None

def main():
    d = sys.argv[1]
    ref = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else None
    print("### Isolated GEMM units (tier 2) against their traced kernel time\n")
    print("| trace | cache | GEMM units | median abs error | mean abs error | max abs error |")
    print("|---|---|---|---|---|---|")
    rows = []
    for t in TRACES:
        for cache, f in (("warm", f"{t}.iso.json"), ("cold", f"{t}.iso.cold.json")):
            r = load(d, f)
            if not r:
                continue
            errs = []
            for u in r["units"]:
                if u["tier"] == "2" and u["status"] == "ok":
                    e = (u["time_us"]["mean"] - u["traced_mean_us"]) / u["traced_mean_us"] * 100
                    errs.append(abs(e))
                    rows.append((t, cache, u))
            if errs:
                print(f"| {t} | {cache} | {len(errs)} | {statistics.median(errs):.1f} % | {statistics.mean(errs):.1f} % | {max(errs):.1f} % |")
    print("\n<details><summary>every GEMM unit</summary>\n")
    print("| trace | cache | unit | call | invocations | traced mean us | isolated mean us | std | error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t, cache, u in rows:
        e = (u["time_us"]["mean"] - u["traced_mean_us"]) / u["traced_mean_us"] * 100
        print(f"| {t} | {cache} | {u['id']} | {u['call']} | {u['invocations']} | {u['traced_mean_us']:.2f} | {u['time_us']['mean']:.2f} | {u['time_us']['std']:.2f} | {e:+.1f} % |")
    print("\n</details>\n")
    print("### Graph mode (tiers 1-2 replayed as one CUDA graph) against the trace\n")
    print("| trace | steps replayed | streams | replay mean us (p50 / p99) | traced sum of replayed steps us | traced critical path us | replay / critical path | isolated prediction us | not executed (tier 3) traced us |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t in TRACES:
        g = load(d, f"{t}.graph.json")
        i = load(d, f"{t}.iso.json")
        if not g:
            continue
        gg = g["graph"]
        pred = i["isolated"]["predicted_us"] if i else float("nan")
        cp = gg["replayed_traced_critical_path_us"]
        print(f"| {t} | {gg['steps_replayed']} | {gg['streams']} | {gg['replay_us']['mean']:.1f} ({gg['replay_us']['p50']:.1f} / {gg['replay_us']['p99']:.1f}) | {gg['replayed_traced_us']:.1f} | {cp:.1f} | {gg['replay_us']['mean']/cp:.3f} | {pred:.1f} | {gg['not_executed_traced_us']:.1f} |")
    print("\n### Energy per graph replay, 5 windows of >= 1 s each, aligned to NVML counter ticks\n")
    print("| trace | J per replay (mean) | CV | above idle J | avg power W | idle W | windows s | isolated prediction J |")
    print("|---|---|---|---|---|---|---|---|")
    for t in TRACES:
        g = load(d, f"{t}.graph.json")
        i = load(d, f"{t}.iso.json")
        if not g or not g["graph"].get("energy"):
            continue
        e = g["graph"]["energy"]
        durs = [g["windows"][k]["duration_s"] for k in e["windows"]]
        pe = i["isolated"].get("predicted_energy_j") if i else None
        print(f"| {t} | {e['per_item_j']['mean']:.4f} | {e['per_item_j']['std']/e['per_item_j']['mean']:.3f} | {e['per_item_above_idle_j']['mean']:.4f} | {e['avg_power_w']['mean']:.1f} | {g['idle']['avg_power_w']:.1f} | {min(durs):.2f}-{max(durs):.2f} | {pe if pe is None else f'{pe:.4f}'} |")
    m = load(d, "memsets1000.graph.json")
    if m:
        s = m["graph"]["replay_us"]
        print(f"\n### Graph overhead: 1000 memsets of 256 B in one graph\n\n{s['mean']:.1f} us per replay (min {s['min']:.1f}, p99 {s['p99']:.1f}, {s['n']} runs) = **{s['mean']/1000:.3f} us per node**.")
    ms = load(d, "multistream_gemm_bf16.graph.json")
    if ms and ref:
        e = ref["results"]["multistream_gemm_bf16"]["eager"]
        gg = ms["graph"]
        print(f"\n### Streams: multistream_gemm_bf16\n\nReplayed as one graph on {gg['streams']} streams with its cross-stream waits: {gg['replay_us']['mean']:.1f} us per replay of the trace's 3 iterations = {gg['replay_us']['mean']/3:.1f} us per iteration (tiers 1-2 only; tier-3 elementwise/softmax steps traced at {gg['not_executed_traced_us']/3:.1f} us per iteration are not executed yet). Reference eager iteration: {e['median_us']:.1f} us median. Traced critical path of the replayed steps: {gg['replayed_traced_critical_path_us']/3:.1f} us per iteration; of all steps: {gg['traced_critical_path_us']/3:.1f} us per iteration.")

if __name__ == "__main__":
    main()
