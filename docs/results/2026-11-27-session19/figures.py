#!/usr/bin/env python3
"""Session 19: every figure the notes quote, from the calls' tarballs. No GPU. Run from the
repository root:
    python3 docs/results/2026-11-27-session19/figures.py
Call 1 (kc-a: the pairs and the round read integer and boolean results as the units alone
did; capture.py's values still matched greedily: a graph capture's integer values lost),
call 2 (kc-b: capture.py's values matched by the longest matching blocks of op names, every
recorded value taken; T5's graph faulted), call 3 (T5's graph without its values; its
capture, ETs and values kept for bisect.py), call 4 (kc-c: an in-place op's written tensor
bound to its producer; T5's graph and training step still faulted). Each model was
captured, answered by `kc run --reference` and measured again in the same call, on one
H200. The plans of calls 2 and 4 took every recorded value but the Python numbers (which
stood at 1); kc now takes only those that steer kernels, and the Python numbers (not run on
a GPU this session)."""
import csv, glob, json, os, statistics, subprocess, tempfile

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
    """(name, model dir, part dir) of every model a call answered."""
    for part in sorted(glob.glob(os.path.join(calls[call], "*"))):
        for d in sorted(glob.glob(os.path.join(part, "*.kc", "*"))):
            yield os.path.basename(d), d, part


def pct(a, b):
    return 100.0 * (a - b) / b


print("== The prediction against the model's CUDA graph, measured back to back in the same call")
print("%-24s %-14s %-15s %-16s %-14s %-9s %s" % (
    "model", "call", "plain t/e %", "prediction t/e", "kc graph t/e", "kc run s",
    "restored units: n, their energy as they ran → now (J per replay), prediction's energy error had they stood"))
rows = []
for call in calls:
    for n, d, part in models(call):
        rp = os.path.join(d, "report", "report.json")
        if not os.path.exists(rp):
            continue
        r = json.load(open(rp))
        p = r.get("prediction")
        if not p or p.get("error_pct") is None:
            continue
        g = next((row for row in r["model"]["rows"] if row["what"].startswith("kc graph")), None)
        iso = json.load(open(os.path.join(d, "plan.isolated.context.json")))
        rest = [u for u in iso["units"] if u.get("restoring")]
        now_j = sum(u["energy"]["per_item_j"]["mean"] * u["invocations"] for u in rest if u.get("energy"))
        ran_j = sum((u["restoring"].get("as_it_ran_energy_j") or 0) * u["invocations"] for u in rest)
        had = pct(p["predicted_energy_j"] - (now_j - ran_j), p["target_energy_j"]) if rest else None
        secs = None
        for line in open(os.path.join(part, "summary.txt")):
            if line.startswith(n + " rc="):
                secs = int(line.split()[2]) / 1000.0
        rv = [abs(float(x["round_vs_in_context_pct"])) for x in csv.DictReader(open(os.path.join(d, "report", "units.csv")))
              if x.get("round_vs_in_context_pct")]
        iv = [abs(float(x["isolated_vs_in_context_pct"])) for x in csv.DictReader(open(os.path.join(d, "report", "units.csv")))
              if x.get("isolated_vs_in_context_pct")]
        rows.append((n, call, p, g, secs, rest, now_j, ran_j, had, rv, iv, len(iso["units"])))
        print("%-24s %-14s %+6.1f / %+5.1f  %+5.1f / %+5.1f   %+5.1f / %+5.1f %7.1f   %s" % (
            n, call, p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"], p["energy_error_pct"],
            g["time_vs_model_pct"], g["energy_vs_model_pct"], secs or float("nan"),
            ("%d, %.4f → %.4f, %+.1f %%" % (len(rest), ran_j, now_j, had)) if rest else "none"))

print()
print("== The MoE decode graphs' grouped GEMMs: traced, in kc's graph (CUPTI), alone and in the round, by call (us)")
for call in calls:
    for n, d, part in models(call):
        if "moe" not in n and "mixtral" not in n:
            continue
        iso = json.load(open(os.path.join(d, "plan.isolated.context.json")))
        gr = json.load(open(os.path.join(d, "plan.graph.json")))
        ctx = {u["unit"]: u for u in gr["graph"]["fidelity"]["units"]}
        rnd = {x["unit"]: x for x in iso["isolated"]["transitions"].get("round_unit_kernels", [])}
        filled = [x for x in gr["notes"] if x.startswith("recorded values") and "graph steps" in x]
        print("%-14s %s: %s" % (call, n, filled[0].split("(")[0] if filled else "no recorded values"))
        for u in iso["units"]:
            if u["label"] != "aten::_grouped_mm":
                continue
            c = ctx.get(u["id"], {})
            per = c.get("in_context_us", float("nan")) / max(u["invocations"], 1)
            print("    unit %d: traced %.1f, kc graph %.1f (%+.1f %%), alone %.1f, round %.1f" % (
                u["id"], u["traced_mean_us"], per, c.get("median_error_pct", float("nan")),
                u["time_us"]["mean"], rnd.get(u["id"], {}).get("round_us", float("nan"))))
