#!/usr/bin/env python3
"""Session 22: every figure the notes quote, from the calls' tarballs. No GPU. Run from the
repository root:
    python3 docs/results/2026-11-27-session22/figures.py
Calls (each model captured, answered by `kc run --reference` and measured again in the same
call; kc-i records the round's kernels over launches back to back): 1 (H100: ViT-B/16 in
TF32, T5's graph, Qwen2's decode graph, a compiled ConvNeXt-T; their plans kept), 2 (H200:
ViT, T5 and Qwen2 answered from their H200 traces, then their H100 plans of call 1 replayed
against the same measurement of the model: the `*.h100plan` rows), 3 (H100, another card:
BERT's inference and training-step graphs, ResNeXt-50's training step, Qwen3-MoE's decode
graph)."""
import csv, glob, json, os, re, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
w = tempfile.mkdtemp()
calls = {}
for t in sorted(glob.glob(os.path.join(here, "call*.txz"))):
    name = os.path.basename(t)[:-4]
    d = os.path.join(w, name)
    os.makedirs(d)
    subprocess.run(["tar", "xJf", t, "-C", d], check=True)
    calls[name] = d


def models(call):
    """(name, model dir, part dir) of every model a call answered: its own trace's plan,
    and an H100 plan replayed on this GPU (NAME.h100plan)."""
    for part in sorted(glob.glob(os.path.join(calls[call], "*"))):
        for d in sorted(glob.glob(os.path.join(part, "*.kc", "*"))):
            yield os.path.basename(d), d, part
            x = os.path.join(part, os.path.basename(d) + ".h100plan")
            if os.path.isdir(x):
                yield os.path.basename(x), x, part


def load(d, f):
    p = os.path.join(d, f)
    return json.load(open(p)) if os.path.exists(p) else None

def sums(d, iso):
    """Per replay over the units with a kernel time alone and in kc's graph: the units alone
    (events), their kernels alone (CUPTI) and the same units' kernels in kc's graph."""
    ctx = {int(x["unit"]): x for x in csv.DictReader(open(os.path.join(d, "report/units.csv")))}
    A = K = C = 0.0
    for u in iso["units"]:
        c = ctx.get(u["id"], {}).get("in_context_mean_us")
        k = (u.get("launches_verified") or {}).get("kernels_us")
        if u["status"] == "ok" and c and k is not None:
            A += u["invocations"] * u["time_us"]["mean"]
            K += u["invocations"] * k
            C += u["invocations"] * float(c)
    return A, K, C



print("== The prediction against the model's CUDA graph, measured back to back in the same call")
print("%-24s %-16s %-15s %-16s %-14s %-8s %s" % ("model", "call", "plain t/e %", "prediction t/e",
                                             "kc graph t/e", "kc run s", "caveat"))
for call in calls:
    for n, d, part in models(call):
        r = load(d, "report/report.json")
        if not r or not r.get("prediction") or r["prediction"].get("error_pct") is None:
            continue
        p = r["prediction"]
        g = next(x for x in r["model"]["rows"] if x["what"].startswith("kc graph"))
        key = ("cross " + n[:-len(".h100plan")]) if n.endswith(".h100plan") else n
        secs = next((int(l.split()[-2]) / 1000 for l in open(os.path.join(part, "summary.txt"))
                     if l.startswith(key + " rc=")), float("nan"))
        print("%-24s %-16s %+6.1f / %+5.1f  %+5.1f / %+5.1f   %+5.1f / %+5.1f %7.1f   %s" % (
            n, call, p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"],
            p["energy_error_pct"], g["time_vs_model_pct"], g["energy_vs_model_pct"], secs,
            (p.get("target_caveat") or "")[:60]))
for call in calls:
    for part in glob.glob(os.path.join(calls[call], "*")):
        for l in open(os.path.join(part, "summary.txt")):
            if re.match(r"(cross )?\S+ rc=(?!0 )", l) or l.startswith(("run rc", "memcheck rc")):
                print("   %s: %s" % (call, l.strip()))

print()
print("== The model's CUDA graph against the traced step: profiled GPU work per iteration")
for call in calls:
    for n, d, part in models(call):
        ref = load(part, "reference.json")["results"].get(n.split(".")[0], {}).get("cuda_graph", {})
        md = open(os.path.join(d, "report/report.md")).read() if os.path.exists(os.path.join(d, "report/report.md")) else ""
        m = re.search(r"\| traced kernel sum \| ([\d.]+) us", md)
        if ref.get("kernel_time_us") and m:
            print("%-24s %-16s model's graph %8.1f us, trace %8.1f us, %+6.1f %%" % (
                n, call, ref["kernel_time_us"], float(m.group(1)),
                100 * (ref["kernel_time_us"] / float(m.group(1)) - 1)))

print()
print("== Where the energy goes: the units alone (events, CUPTI kernels) against kc's graph's kernels (CUPTI), us per replay; the units' energy-weighted window temperature against kc's graph's")
for call in calls:
    for n, d, part in models(call):
        iso, gr = load(d, "plan.isolated.context.json"), load(d, "plan.graph.json")
        if not iso or not os.path.exists(os.path.join(d, "report/units.csv")):
            continue
        A, K, C = sums(d, iso)
        W = iso["windows"]
        et = ej = 0.0
        for u in iso["units"]:
            en = u.get("energy")
            if en:
                ts = [sum(W[i]["temperature_c"]) / 2 for i in en["windows"] if W[i].get("temperature_c")]
                if ts:
                    et += u["predicted_energy_j"] * sum(ts) / len(ts)
                    ej += u["predicted_energy_j"]
        gt = [sum(x["temperature_c"]) / 2 for x in gr["windows"] if x["label"] == "graph"]
        t = iso["isolated"]["transitions"]
        print("%-24s %-16s alone %8.0f, alone kernels %8.0f, kc graph kernels %8.0f; T %.1f vs %.1f °C; round's extra energy × switches %+.3f J per replay (Σ alone %.3f J)" % (
            n, call, A, K, C, et / ej if ej else float("nan"), sum(gt) / len(gt) if gt else float("nan"),
            (t.get("round_extra_energy_j") or 0) * t["total"], iso["isolated"]["predicted_energy_j"]))

print()
print("== The plain sum's energy by cache policy and measurement, against the model's CUDA graph (%)")
for call in calls:
    for n, d, part in models(call):
        r = load(d, "report/report.json")
        if not r or not r.get("prediction"):
            continue
        p = r["prediction"]
        extra = p.get("duty_energy_asked") or ""
        m = re.search(r"([\d.]+) J per replay where back to back they gave ([\d.]+) J \(([-+\d.]+) %\)", extra)
        print("%-24s %-16s cache %-8s plain energy %+5.1f %%, prediction %+5.1f %%%s" % (
            n, call, r.get("cache"), p["plain_energy_error_pct"], p["energy_error_pct"],
            ("; every unit at a duty cycle: %s J where back to back %s J (%s %%)" % m.groups()) if m else ""))

print()
print("== Per unit against kc's graph (deliverable 3): median |error| of the unit alone and of its kernels in the round")
for call in calls:
    for n, d, part in models(call):
        r = load(d, "report/report.json")
        if not r:
            continue
        t = r.get("time", {})
        print("%-26s %-16s alone %5.2f %%, in the round %5.2f %%" % (
            n, call, t.get("unit_isolated_vs_in_context_median_abs_pct") or float("nan"),
            t.get("unit_round_vs_in_context_median_abs_pct") or float("nan")))

print()
print("== The round's gap term against kc's graph (a diagnostic: the graph never enters the prediction), us per replay")
for call in calls:
    for n, d, part in models(call):
        r, iso = load(d, "report/report.json"), load(d, "plan.isolated.context.json")
        if not r or not iso or not r.get("prediction") or r["prediction"].get("error_pct") is None:
            continue
        p, t = r["prediction"], iso["isolated"]["transitions"]
        A, K, C = sums(d, iso)
        g = next(x for x in r["model"]["rows"] if x["what"].startswith("kc graph"))
        per = A / p["plain_us"]
        graph = p["target_us"] * (1 + g["time_vs_model_pct"] / 100) * per
        actual = (graph - C) - (A - K)
        term = sum(x["us"] for x in p["terms"] if x["what"].startswith("gaps")) * per
        kern = sum(x["us"] for x in p["terms"] if x["what"].startswith("kernels slower")) * per
        print("%-26s %-16s gaps: term %+6.0f, kc graph %+6.0f (%+4.1f %% of the model); kernels: term %+6.0f, kc graph %+6.0f (%+4.1f %%); gap per switch %.2f us" % (
            n, call, term, actual, 100 * (term - actual) / graph, kern, C - K, 100 * (kern - (C - K)) / graph,
            t.get("round_gap_extra_us") or 0))

print()
print("== The round's recorded launches (kc-i: three back to back after a first from idle), per cycle, us: the first launch's kernels, the others', their span and own gaps, against the timed cycle")
for call in calls:
    for n, d, part in models(call):
        iso = load(d, "plan.isolated.context.json")
        if not iso:
            continue
        t = iso["isolated"]["transitions"]
        if t.get("round_recorded_span_us") is None:
            continue
        print("%-26s %-16s first %8.1f, kernels %8.1f, span %8.1f, gaps %6.1f; timed cycle %8.1f (span %+5.1f %%); gap per switch %.2f us" % (
            n, call, t.get("round_first_recorded_kernels_us") or float("nan"), t["round_kernels_us"],
            t["round_recorded_span_us"], t["round_recorded_gaps_us"], t["round_cycle_us"],
            100 * (t["round_recorded_span_us"] / t["round_cycle_us"] - 1), t.get("round_gap_extra_us") or 0))
