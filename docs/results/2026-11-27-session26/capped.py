#!/usr/bin/env python3
"""Not adopted (session 26): the units a duty cycle measured (their windows alone at the
power cap) priced at their energy at the cap alone instead of at the duty cycle, over every
kept answer of sessions 17-26 that has such units (context cache, against the model in the
same call, no caveat on the target), each answered again by the committed kc; the power
limit's bound applied after, as the prediction applies it. Calls 3-4 of session 26 found a
second run of those units inside the model's program within 0.6 and 2.3 % of their energy
at the cap and 14.5 and 5.6 % under the duty cycle's (figures.txt, table 3).
Run from the repository root after `cargo build --release`:
    python3 docs/results/2026-11-27-session26/capped.py > docs/results/2026-11-27-session26/capped.txt
`answers()` is also session 27's temperature.py's and session 28's steady.py's list of kept
answers, each up to its own session.
"""
import glob, json, os, subprocess, tarfile, tempfile

KC = os.environ.get("KC", "target/release/kc")
HERE = os.path.dirname(os.path.abspath(__file__))


def answers(last=None):
    """The kept answers of sessions 17 to `last` (every later one where None)."""
    work = tempfile.mkdtemp()
    for s in sorted(glob.glob(f"{HERE}/../*-session*")):
        n = int(s.rsplit("session", 1)[1])
        if n < 17 or (last is not None and n > last):
            continue
        for t in sorted(glob.glob(f"{s}/call*.txz")):
            call = f"s{n}/{os.path.basename(t)[:-4]}"
            d = f"{work}/{call}"
            os.makedirs(d, exist_ok=True)
            with tarfile.open(t) as tf:
                tf.extractall(d, filter="data")
            for iso in sorted(glob.glob(f"{d}/*/*.kc/*/plan.isolated.context.json") +
                              glob.glob(f"{d}/*/*.h100plan/plan.isolated.context.json")):
                run = os.path.dirname(iso)
                cross = run.endswith(".h100plan")
                name = os.path.basename(run)[:-len(".h100plan")] if cross else os.path.basename(run)
                part = os.path.dirname(run) if cross else os.path.dirname(os.path.dirname(run))
                ref, graph = f"{part}/reference.json", f"{run}/plan.graph.json"
                if not (os.path.exists(ref) and os.path.exists(graph)):
                    continue
                if name not in json.load(open(ref)).get("results", {}):
                    continue
                out = f"{run}/kept-report"
                r = subprocess.run([KC, "report", graph, "--isolated", iso, "--reference", ref,
                                    "--reference-entry", name, "-o", out, "--json"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    continue
                rep = json.load(open(f"{out}/report.json"))
                p = rep.get("prediction") or {}
                if not p.get("terms_measured") or p.get("predicted_energy_j") is None or not p.get("target_energy_j"):
                    continue
                # Where the answer came from, for a script that answers it again
                # (session 28's steady.py): the graph, the reference and its entry.
                rep["_run"] = (graph, ref, name)
                yield call, name + (" (H100 plan)" if cross else ""), rep, json.load(open(iso))


def main():
    rows = []
    for call, model, rep, I in answers(last=26):
        p = rep["prediction"]
        if p.get("target_caveat"):
            continue
        duty = [u for u in I["units"] if u.get("energy_at_duty") and u.get("predicted_energy_j")]
        if not duty:
            continue
        iters = rep.get("iterations_per_replay") or 1
        delta = sum(u["energy_at_duty"]["alone_per_item_j"] * u["invocations"] - u["predicted_energy_j"]
                    for u in duty) / iters
        lim = next((x for x in p["terms"] if x["what"].startswith("the GPU's power limit")), None)
        parts = p["predicted_energy_j"] - (lim["energy_j"] if lim else 0)
        alt = parts + delta
        lw = I["device"].get("power_limit_w")
        if lw:
            alt = min(alt, lw * p["predicted_us"] * 1e-6)
        t = p["target_energy_j"]
        rows.append((call, model, len(duty), 100 * (p["predicted_energy_j"] / t - 1), 100 * (alt / t - 1)))

    print("Answers with units a duty cycle measured: the prediction's energy error against the model (%),")
    print("with those units at the duty cycle (as kc prices them) and at their energy at the cap alone")
    print("| call | model | units | at the duty cycle | at the cap |")
    print("|---|---|---|---|---|")
    for c, m, n, a, b in rows:
        print(f"| {c} | {m} | {n} | {a:+.1f} | {b:+.1f} |")
    within = lambda i: sum(1 for r in rows if abs(r[i]) <= 3.0)
    mean_abs = lambda i: sum(abs(r[i]) for r in rows) / max(len(rows), 1)
    print()
    print(f"{len(rows)} answers; within 3 %: {within(3)} at the duty cycle, {within(4)} at the cap; "
          f"mean |error| {mean_abs(3):.2f} % and {mean_abs(4):.2f} %")


if __name__ == "__main__":
    main()
