#!/usr/bin/env python3
"""Session 24: every figure the notes quote, from the calls' tarballs, the reports answered
again by the committed kc (`target/release/kc`, or KC=): no GPU. Run from the repository
root after `cargo build --release`:
    python3 docs/results/2026-11-27-session24/figures.py
Calls (kc-p, run.sh's parts; a capped unit's duty launch timed from the feeder's batches
inside its counted windows): 1 (H100, part a: ResNeXt-50's step twice on one capture,
ViT-B/16 TF32), 2 (H100, part b: Swin V2-T, Wide ResNet-50-2's step, ViT-L/16, their plans
kept), 3 (H200, part c: the same three from H200 traces, and two of the H100 plans replayed
there against the model measured there), 4 (H100, part d: ResNeXt-50's step, ConvNeXt-B,
VGG-16-BN, LLaMA's decode graph), 5 (H100, part e: T5's graph, BERT's training-step
graph, Qwen2's and GPT-2's decode graphs), 6 (H200, part f: Wide ResNet-50-2's step
measured, its H100 plan replayed there), 7 (H100, kc-q, part g: the feeder's batches
stamped by the windows' clock; ViT-B/16 TF32). The power limit's bound (a2c1da7) is a report term: the
on-device reports predate it, the answers here hold it."""
import collections, glob, json, os, re, statistics, subprocess, tempfile
from datetime import datetime

here = os.path.dirname(os.path.abspath(__file__))
w = tempfile.mkdtemp()
calls = {}
for t in sorted(glob.glob(os.path.join(here, "call*.txz"))):
    name = os.path.basename(t)[:-4]
    d = os.path.join(w, name)
    os.makedirs(d)
    subprocess.run(["tar", "xJf", t, "-C", d], check=True)
    calls[name] = d


def answers(call):
    """(name, model dir, part dir) of every `kc run` of a call, a second run marked."""
    for part in sorted(glob.glob(os.path.join(calls[call], "*"))):
        for d in sorted(glob.glob(os.path.join(part, "*.kc", "*"))):
            again = os.path.basename(os.path.dirname(d)).endswith(".again.kc")
            yield os.path.basename(d) + (" (again)" if again else ""), d, part
        for d in sorted(glob.glob(os.path.join(part, "*.h100plan"))):
            yield os.path.basename(d)[:-9] + " (H100 plan)", d, part


KC = os.environ.get("KC", "target/release/kc")


def report(n, d, part):
    """The committed kc's report of an answer, against the model measured in its call."""
    entry = n.split(" (")[0]
    out = os.path.join(d, "report24")
    subprocess.run([KC, "report", os.path.join(d, "plan.graph.json"), "--isolated",
                    os.path.join(d, "plan.isolated.context.json"), "--reference",
                    os.path.join(part, "reference.json"), "--reference-entry", entry, "-o", out,
                    "--json"], check=True, capture_output=True)
    return load(out, "report.json")


def load(d, f):
    p = os.path.join(d, f)
    return json.load(open(p)) if os.path.exists(p) else None


def ms(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000


def seconds(part, n):
    key = n.replace(" (again)", " again")
    if key.endswith(" (H100 plan)"):
        key = "cross " + key[:-12]
    for l in open(os.path.join(part, "summary.txt")):
        if l.startswith(key + " rc="):
            return int(l.split()[-2]) / 1000
    return float("nan")


def gpu(part):
    return open(os.path.join(part, "gpu.csv")).read().splitlines()[1].split(",")[0].replace("NVIDIA ", "")[:4]


def starved(iso):
    """Units whose windows completed 5 % fewer launches than their timed duration."""
    return sum(1 for n in iso["notes"] if re.search(r"energy windows completed -\d", n))


print("== The prediction against the model's CUDA graph, measured back to back in the same call")
print("   (energy before the power limit's bound: the parts' own, where the bound applied)")
print("%-34s %-13s %-5s %-15s %-16s %-9s %-14s %-8s %s" % ("model", "call", "GPU", "plain t/e %",
      "prediction t/e", "pre-limit", "kc graph t/e", "kc run s", "windows short"))
for call in calls:
    for n, d, part in answers(call):
        r = report(n, d, part)
        iso = load(d, "plan.isolated.context.json")
        if not r or not r.get("prediction") or r["prediction"].get("error_pct") is None:
            continue
        p = r["prediction"]
        g = next(x for x in r["model"]["rows"] if x["what"].startswith("kc graph"))
        lim = [t for t in p["terms"] if t["what"].startswith("the GPU's power limit")]
        pre = ("%+5.1f" % (100 * ((p["predicted_energy_j"] - lim[0]["energy_j"]) / p["target_energy_j"] - 1))
               if lim else "")
        print("%-34s %-13s %-5s %+6.1f / %+5.1f  %+5.1f / %+5.1f   %-9s %+5.1f / %+5.1f %7.1f   %d" % (
            n, call, gpu(part), p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"],
            p["energy_error_pct"], pre, g["time_vs_model_pct"], g["energy_vs_model_pct"],
            seconds(part, n), starved(iso)))

print()
print("== Where kc run's time went (deliverable 6): seconds")
print("%-30s %-14s %6s %6s %6s  %s" % ("model", "call", "run", "graph", "units", "windows by kind (s) and count"))
for call in calls:
    for n, d, part in answers(call):
        g, iso = load(d, "plan.graph.json"), load(d, "plan.isolated.context.json")
        if not iso or len(iso["units"]) < 100:
            continue
        kinds = collections.Counter()
        count = collections.Counter()
        for x in iso["windows"]:
            l = x["label"]
            k = ("settling" if x.get("settling") else "duty") if "duty" in l else (
                "units" if l.startswith("unit") else l)
            kinds[k] += (x["end_unix_ms"] - x["start_unix_ms"]) / 1000
            count[k] += 1
        print("%-30s %-14s %6.1f %6.1f %6.1f  %s" % (
            n, call, seconds(part, n), (ms(g["finished"]) - ms(g["started"])) / 1000,
            (ms(iso["finished"]) - ms(iso["started"])) / 1000,
            ", ".join("%s %.1f (%d)" % (k, v, count[k]) for k, v in sorted(kinds.items()))))

print()
print("== A unit's set-up before its timed launches (setup_ms, ms): median and sum over units")
for call in calls:
    for n, d, part in answers(call):
        iso = load(d, "plan.isolated.context.json")
        u = [x["setup_ms"] for x in iso["units"] if x.get("setup_ms")] if iso else []
        if len(u) < 100:
            continue
        print("%-30s %-14s %s" % (n, call, ", ".join(
            "%s %.1f/%.0f" % (k, statistics.median(x[k] for x in u), sum(x[k] for x in u))
            for k in ["restore", "census", "capture", "warm", "record"])))

print()
print("== The gap from a unit's last window to the next unit's first (ms, median, count)")
for call in calls:
    for n, d, part in answers(call):
        iso = load(d, "plan.isolated.context.json")
        if not iso or len(iso["units"]) < 100:
            continue
        byu = collections.OrderedDict()
        for x in iso["windows"]:
            if x["label"].startswith("unit "):
                byu.setdefault(int(x["label"].split()[1]), []).append(x)
        ids = list(byu)
        gaps = collections.defaultdict(list)
        for a, b in zip(ids, ids[1:]):
            after = "after a duty cycle" if "duty" in byu[a][-1]["label"] else "after windows alone"
            gaps[after].append(byu[b][0]["start_unix_ms"] - byu[a][-1]["end_unix_ms"])
        print("%-30s %-14s %s" % (n, call, "; ".join(
            "%s %.0f (%d)" % (k, statistics.median(v), len(v)) for k, v in sorted(gaps.items()))))

print()
print("== Units measured again at a duty cycle: (share of each launch, windows still held")
print("   down, settling windows) and how many units; the energy they give against at the cap")
for call in calls:
    for n, d, part in answers(call):
        iso = load(d, "plan.isolated.context.json")
        if not iso:
            continue
        c = collections.Counter()
        duty_j = alone_j = 0.0
        for u in iso["units"]:
            du = u.get("energy_at_duty")
            if du and u.get("energy"):
                c[(round(du["unit_share"], 3), du["duty_capped_windows"], du.get("settling_windows", 0))] += 1
                duty_j += u["energy"]["per_item_j"]["mean"] * u["invocations"]
                alone_j += du["alone_per_item_j"] * u["invocations"]
        if c:
            print("%-30s %-14s %+5.1f %%  %s" % (n, call, 100 * (duty_j / alone_j - 1),
                                               sorted(c.items())))

print()
print("== The round's gap term and the units' kernels alone (CUPTI, now over launches 2-4)")
for call in calls:
    for n, d, part in answers(call):
        iso = load(d, "plan.isolated.context.json")
        t = (iso or {}).get("isolated", {}).get("transitions") or {}
        if t.get("round_gap_extra_us") is None:
            continue
        print("%-30s %-14s gap %.2f us per switch (%d switches a cycle), round extra %.2f ± %.2f us per switch" % (
            n, call, t["round_gap_extra_us"], t["round_switches"], t["round_extra_us"],
            t.get("round_extra_sem_us") or 0))

print()
print("== The round's cycle timed (launches of n cycles after a copy, the copy's own time taken")
print("   off) and by difference (n cycles and one after the same copy), us per cycle")
for call in calls:
    for n, d, part in answers(call):
        iso = load(d, "plan.isolated.context.json")
        t = (iso or {}).get("isolated", {}).get("transitions") or {}
        if t.get("round_cycle_by_difference_us") is None:
            continue
        print("%-34s %-13s timed %8.1f, by difference %8.1f ± %.1f (%+.1f), CUPTI span %8.1f" % (
            n, call, t["round_cycle_us"], t["round_cycle_by_difference_us"],
            t["round_cycle_by_difference_sem_us"],
            t["round_cycle_by_difference_us"] - t["round_cycle_us"], t["round_recorded_span_us"]))

print()
print("== A duty unit's launch: timed from the feeder's batches inside its counted windows")
print("   (launch_batches > 0) or after them; launch × share / the unit's launch")
for call in calls:
    for n, d, part in answers(call):
        iso = load(d, "plan.isolated.context.json")
        du = [u["energy_at_duty"] for u in (iso or {}).get("units", []) if u.get("energy_at_duty")]
        if not du:
            continue
        b = [x.get("launch_batches", 0) for x in du]
        ratio = sorted(x["launch_us"] * x["unit_share"] / x["unit_launch_us"] for x in du)
        print("%-34s %-13s %2d units, %2d from batches (median %d batches), ratio %.4f-%.4f" % (
            n, call, len(du), sum(1 for x in b if x > 0), statistics.median(b), ratio[0], ratio[-1]))
