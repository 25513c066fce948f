"""Session 26's figures from its calls' results (no GPU): each model's answer reported again
with the committed kc (`cargo build --release` first), and from `--kinds-left-out` (the
model's program of one replay, on one stream, measured whole at the start and the end, and
for each kind of unit without it and, from call 2 on, with each of its steps run twice in
its place):

1. per model: the prediction against the model's CUDA graph (time / energy %); the whole
   program against kc's graph; the sum of the units alone, and (calls 2-4) the sum over
   the kinds of a second run's cost in the program, each against the whole program;
2. per kind (calls 2-4): its units alone against a second run of them in the program, and
   against its cost in the program (the whole less the program without it), time and
   energy %;
3. the units a duty cycle measured (their windows alone at the power cap): Σ energy ×
   invocations at the cap alone, at the duty cycle (the plain sum's figure), and a second
   run of them in the program.

Call 5 (T5's graph, kc-za) ended by SIGSEGV inside the first launch of its program with
`aten::add_` doubled, as call 4's T5 graph did: no results.

Run from the repository root: python3 docs/results/2026-11-27-session26/figures.py
"""
import json, os, subprocess, tarfile, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KC = os.path.join(HERE, "..", "..", "..", "target", "release", "kc")
CALLS = ["call1-a-kc-x", "call2-a-kc-y", "call3-c-kc-z", "call4-b-kc-z"]


def report(part, name, tmp):
    d = os.path.join(tmp, part, f"{name}.kc", name)
    out = os.path.join(d, "report26")
    subprocess.run([KC, "report", f"{d}/plan.graph.json", "--isolated",
                    f"{d}/plan.isolated.context.json", "--reference",
                    f"{tmp}/{part}/reference.json", "--reference-entry", name, "-o", out,
                    "--json"], check=True, capture_output=True)
    return json.load(open(os.path.join(out, "report.json"))), d


def pct(a, b):
    return "-" if a is None or b in (None, 0) else f"{100 * (a / b - 1):+.1f}"


models, kinds, duty = [], [], []
with tempfile.TemporaryDirectory() as tmp:
    for call in CALLS:
        sub = os.path.join(tmp, call)
        os.makedirs(sub)
        with tarfile.open(os.path.join(HERE, call + ".txz")) as t:
            t.extractall(sub)
        part = call.split("-")[1]
        for f in sorted(os.listdir(os.path.join(sub, part))):
            if not f.endswith(".kc"):
                continue
            name = f[:-3]
            d = os.path.join(sub, part, f, name)
            if not os.path.exists(os.path.join(d, "plan.isolated.context.json")):
                continue
            r, d = report(part, name, sub)
            k = r.get("kinds_in_program")
            if not k:
                continue
            p = r["prediction"]
            m = r["model"]
            whole_us = (k["whole_first_us"] + k["whole_last_us"]) / 2
            whole_j = (k["whole_first_j"] + k["whole_last_j"]) / 2
            seconds = [c for c in k["kinds"] if c.get("second_run_j") is not None]
            both = len(seconds) == len(k["kinds"])
            s_us = sum(c["second_run_us"] for c in seconds) if both else None
            s_j = sum(c["second_run_j"] for c in seconds) if both else None
            models.append((call, name, f'{p["error_pct"]:+.1f} / {p["energy_error_pct"]:+.1f}',
                           f'{pct(whole_us, r["time"]["actual_us"])} / {pct(whole_j, r["energy"]["actual_j"])}',
                           f'{pct(k["alone_us"], whole_us)} / {pct(k["alone_j"], whole_j)}',
                           f'{pct(s_us, whole_us)} / {pct(s_j, whole_j)}' if both else "-",
                           f'{pct(k["alone_j"], s_j)}' if both else "-",
                           f'{k["whole_temperature_c"][0]:.0f}-{k["whole_temperature_c"][1]:.0f}'
                           if k.get("whole_temperature_c") else "-"))
            for c in k["kinds"]:
                kinds.append((call, name, c["kind"], c["invocations"],
                              pct(c["alone_us"], c.get("second_run_us")),
                              pct(c.get("alone_j"), c.get("second_run_j")),
                              pct(c["alone_us"], c["in_program_us"]),
                              pct(c.get("alone_j"), c.get("in_program_j"))))
            iso = json.load(open(os.path.join(d, "plan.isolated.context.json")))
            at_cap = sum(u["energy_at_duty"]["alone_per_item_j"] * u["invocations"]
                         for u in iso["units"] if u.get("energy_at_duty"))
            at_duty = sum(u["predicted_energy_j"] for u in iso["units"]
                          if u.get("energy_at_duty") and u.get("predicted_energy_j"))
            second = [c.get("second_run_j") for c in k["kinds"] if c["kind"].endswith("at the cap alone")]
            s = sum(second) if second and None not in second else None
            duty.append((call, name, sum(1 for u in iso["units"] if u.get("energy_at_duty")),
                         f"{at_cap:.4f}", f"{at_duty:.4f}", "-" if s is None else f"{s:.4f}",
                         pct(at_cap, s), pct(at_duty, s)))


def table(title, header, rows, last=False):
    """A numbered table: its title lines, a Markdown header and its rows."""
    print(title)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    if not last:
        print()


table("1. Against the model's CUDA graph (same call), %: the prediction; the program whole (mean of\n"
      "   its two measurements) against kc's graph; Σ units alone and Σ a second run of each kind\n"
      "   in the program against the whole; Σ alone against Σ second runs (energy)",
      ["call", "model", "prediction", "whole vs kc graph", "Σ alone vs whole", "Σ second runs vs whole",
       "Σ alone vs Σ second, energy", "whole °C"], models)
table("2. Per kind, per replay: its units alone against a second run of them in the program, and\n"
      "   against their cost in the program (the whole less the program without them), %",
      ["call", "model", "kind", "invocations", "vs second, time", "vs second, energy",
       "vs in program, time", "vs in program, energy"], kinds)
table("3. The units measured at a duty cycle (their windows alone at the power cap): Σ energy ×\n"
      "   invocations per replay at the cap alone, at the duty cycle (the plain sum's), and a\n"
      "   second run of their kinds in the program (from call 2), J; each of the first two against it, %",
      ["call", "model", "units", "at the cap", "at the duty cycle", "second run in the program",
       "cap vs second", "duty vs second"], duty, last=True)
