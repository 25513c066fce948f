"""Session 40's figures, from the results and reports chart.sh keeps with W=DIR:
    W=/tmp/w40 bash docs/results/2026-11-29-session40/chart.sh
    python3 docs/results/2026-11-29-session40/figures.py /tmp/w40

1. The round's cost split by busy time (what kc takes where recorded) against the split by
   the kernels' durations, on session 40's eleven answers (calls 1-3): the same results
   reported again without `round_gap_extra_busy_us`, which the report then splits by
   durations (kc before session 40), and call 4's two (kc-zc: Swin-T in TF32 again, its copy
   units busy for none; ResNeXt-101 with --round-runs 4) and call 5's (kc-zd: ResNeXt-101 and
   RegNetY-1.6GF again, their graph's kernels' busy time recorded). Needs `target/release/kc`.
2. ResNeXt-101 32x8d (call 1): each unit's kernels beyond alone, per iteration, in the round
   (busy time), in kc's graph of the model (durations, CUPTI `--verify`) and in its launches
   after its lead-ins (busy time), the units told apart in all three.
3. The producers' term with the lead-ins' kernels beyond alone taken out at the lead-ins'
   own power (their energy alone over their time alone), beside the term as kc takes it,
   on every charted answer whose launches after their lead-ins were recorded with CUPTI.
4. The time with each such unit's own kernels after its lead-ins in place of its kernels in
   the round (both by busy time where the round is split so, else by durations), on the
   same answers.
5. The slower-kernels term's time priced at the units' own mean power (the plain sum's
   energy over its time) in place of the idle power, the gaps still at idle, on every
   charted answer (the part of it the producers' term takes out scaled alike).
"""
import glob
import json
import os
import subprocess
import sys

KC = os.environ.get("KC", "target/release/kc")
NAMES = {"m": ["resnext101", "resnext50", "regnety_tf32", "regnetx"],
         "n": ["resnext101_64", "regnety16", "regnetx8"],
         "o": ["effnet_b2", "resnet50_tf32", "swin_t_tf32", "vit_b_32_train"],
         "p": ["resnext101", "swin_t_tf32"],
         "q": ["resnext101", "regnety16"]}
CALLS = {"m": "call1-m-kc-zb", "n": "call2-n-kc-zb", "o": "call3-o-kc-zb", "p": "call4-p-kc-zc",
         "q": "call5-q-kc-zd"}


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt(x):
    return "-" if x is None else f"{x:+.2f}"


def split(w):
    print("1. The round's cost split by durations and by busy time (time / energy against the model)")
    print("| model | units | `kc run` | plain | by durations | **by busy time** | kc's graph | gap a switch, durations / busy (us) |")
    print("|---|---|---|---|---|---|---|---|")
    for part, names in NAMES.items():
        base = f"{w}/{CALLS[part]}/{part}"
        summary = open(f"{base}/summary.txt").read().splitlines()
        for n in names:
            d = f"{base}/{n}.kc/{n}"
            iso = load(f"{d}/plan.isolated.context.json")
            t = iso["isolated"]["transitions"]
            gaps = (t.get("round_gap_extra_us"), t.get("round_gap_extra_busy_us"))
            t.pop("round_gap_extra_busy_us", None)
            tmp = f"{w}/split/{part}/{n}"
            os.makedirs(tmp, exist_ok=True)
            with open(f"{tmp}/iso.json", "w") as f:
                json.dump(iso, f)
            for iso_path, out in [(f"{tmp}/iso.json", "durations"), (f"{d}/plan.isolated.context.json", "busy")]:
                subprocess.run([KC, "report", f"{d}/plan.graph.json", "--isolated", iso_path,
                                "--reference", f"{base}/reference.json", "--reference-entry", n,
                                "-o", f"{tmp}/{out}"], check=True, capture_output=True)
            dur = load(f"{tmp}/durations/report.json")["prediction"]
            r = load(f"{tmp}/busy/report.json")
            busy = r["prediction"]
            rows = r["model"]["rows"]
            kc = next(x for x in rows if x["what"] == "kc graph replay")
            run_ms = next(l.split()[2] for l in summary if l.startswith(f"{n} rc="))
            units = sum(1 for u in iso["units"] if u["status"] == "ok")
            caveat = " ⚠" if dur.get("side_by_side_caveat") else ""
            runs = t.get("round_runs") or 1
            call = CALLS[part][4]
            label = n if part in "mno" else f"{n} (call {call}{f', {runs} rounds' if runs > 1 else ''})"
            print(f"| {label} | {units} | {int(run_ms) / 1000:.1f} s | {busy['plain_error_pct']:+.1f} / "
                  f"{busy['plain_energy_error_pct']:+.1f} % | {dur['error_pct']:+.1f} / "
                  f"{dur['energy_error_pct']:+.1f} %{caveat} | **{busy['error_pct']:+.1f} / "
                  f"{busy['energy_error_pct']:+.1f} %** ({busy.get('round_split_by')}) | "
                  f"{kc['time_vs_model_pct']:+.1f} / {kc['energy_vs_model_pct']:+.1f} % | "
                  f"{fmt(gaps[0])} / {fmt(gaps[1])} |")


def resnext101(w):
    print("\n2. ResNeXt-101 32x8d: each unit's kernels beyond alone, us per iteration")
    d = f"{w}/call1-m-kc-zb/m/resnext101.kc/resnext101"
    iso = load(f"{d}/plan.isolated.context.json")
    units = {u["id"]: u for u in iso["units"]}
    iters = 3
    ctx = {u["id"]: u.get("in_context_mean_us")
           for u in load(f"{w}/split/m/resnext101/busy/report.json")["units"]}
    rows, sums = [], [0.0, 0.0, 0.0]
    for r in iso["isolated"]["transitions"]["round_unit_kernels"]:
        u = units[r["unit"]]
        n = u["invocations"] / iters
        a = u.get("after_lead_in") or {}
        k = a.get("kernels") or {}
        side = u["launches_verified"]["kernels_us"] > 1.5 * u["time_us"]["mean"]
        in_round = (r["round_busy_us"] - r["alone_busy_us"]) * n
        in_graph = None if side or ctx.get(r["unit"]) is None else (ctx[r["unit"]] - r["alone_us"]) * n
        led = None if k.get("unit_busy_us") is None else (k["unit_busy_us"] - r["alone_busy_us"]) * n
        rows.append((r["unit"], u["label"], u["invocations"], in_round, in_graph, led, side))
        if in_graph is not None:
            sums[0] += in_round
            sums[1] += in_graph
    rows.sort(key=lambda x: -abs(x[3]))
    print("| unit | label | invocations | round | kc's graph | after its lead-ins |")
    print("|---|---|---|---|---|---|")
    for unit, label, inv, a, b, c, side in rows[:8]:
        print(f"| {unit} | {label}{' (side by side)' if side else ''} | {inv} | {a:+.1f} | {fmt(b)} | {fmt(c)} |")
    print(f"Over the {sum(1 for x in rows if x[4] is not None)} units not side by side: round {sums[0]:+.1f}, "
          f"kc's graph {sums[1]:+.1f} us per iteration; all units in the round {sum(x[3] for x in rows):+.1f}")


def lead_ins_at_their_power(w):
    print("\n3. The producers' term as kc takes it, and with the lead-ins' kernels beyond alone "
          "taken out at the lead-ins' own power (energy against the model)")
    kept = within = within_alt = 0
    for f in sorted(glob.glob(f"{w}/r/*/*/*/report.json")):
        call, part, name = f.split("/")[-4:-1]
        res = f"{w}/{call}/{part}/{name}.kc/{name}/plan.isolated.context.json"
        if "." in name or not os.path.exists(res):
            continue
        p = load(f)["prediction"]
        iso = load(res)
        taken_out = 0.0
        recorded = 0
        for u in iso["units"]:
            a = u.get("after_lead_in")
            if (u["status"] != "ok" or not a or a.get("energy_j") is None or a.get("capped_windows", 0) > 0
                    or not u.get("energy")):
                continue
            k = a.get("kernels")
            if not k or k.get("lead_ins_us") is None or a["lead_ins_us"] <= 0:
                continue
            power = (a.get("lead_ins_energy_j") or 0.0) / (a["lead_ins_us"] * 1e-6)
            taken_out += u["invocations"] * (k["lead_ins_us"] - k["lead_ins_alone_us"]) * 1e-6 * power
            recorded += 1
        if not recorded:
            continue
        kept += 1
        e, target = p["predicted_energy_j"], p["target_energy_j"]
        as_kc = 100 * (e / target - 1)
        alt = 100 * ((e - taken_out) / target - 1)
        within += abs(as_kc) <= 3
        within_alt += abs(alt) <= 3
        print(f"  {call}/{name:20s} {recorded:3d} units: as kc {as_kc:+5.1f} %, lead-ins taken out {alt:+5.1f} % "
              f"({taken_out * 1e3:6.1f} mJ per replay)")
    print(f"  within 3 %: {within} of {kept} as kc takes it, {within_alt} with the lead-ins taken out")


def led_in_place_of_round(w):
    print("\n4. The time with the units' own kernels after their lead-ins in place of the round's "
          "(time against the model)")
    kept = within = within_alt = 0
    for f in sorted(glob.glob(f"{w}/r/*/*/*/report.json")):
        call, part, name = f.split("/")[-4:-1]
        res = f"{w}/{call}/{part}/{name}.kc/{name}/plan.isolated.context.json"
        if "." in name or not os.path.exists(res):
            continue
        p = load(f)["prediction"]
        iso = load(res)
        t = iso["isolated"]["transitions"]
        by_busy = p.get("round_split_by") == "busy time"
        in_round = {r["unit"]: r for r in t.get("round_unit_kernels", [])}
        round_part = led_part = 0.0
        units = 0
        for u in iso["units"]:
            a, r = u.get("after_lead_in"), in_round.get(u["id"])
            k = (a or {}).get("kernels") or {}
            v = u.get("launches_verified") or {}
            if u["status"] != "ok" or r is None:
                continue
            if by_busy and k.get("unit_busy_us") is not None and v.get("busy_us") is not None:
                own, alone, rd, ra = k["unit_busy_us"], v["busy_us"], r["round_busy_us"], r["alone_busy_us"]
            elif not by_busy and k.get("unit_us") is not None:
                own, alone, rd, ra = k["unit_us"], v["kernels_us"], r["round_us"], r["alone_us"]
            else:
                continue
            units += 1
            round_part += (rd - ra) * u["invocations"]
            led_part += (own - alone) * u["invocations"]
        if not units:
            continue
        kept += 1
        pred, target = p["predicted_us"], p["target_us"]
        as_kc = 100 * (pred / target - 1)
        alt = 100 * ((pred - round_part + led_part) / target - 1)
        within += abs(as_kc) <= 2
        within_alt += abs(alt) <= 2
        print(f"  {call}/{name:20s} {units:3d} units: as kc {as_kc:+5.1f} %, after their lead-ins {alt:+5.1f} % "
              f"(round {round_part:+8.1f}, after lead-ins {led_part:+8.1f} us per replay)")
    print(f"  within 2 %: {within} of {kept} as kc takes it, {within_alt} with the units after their lead-ins")


def slower_kernels_at_the_units_power(w):
    print("\n5. The slower kernels' time at the units' own power, the gaps at idle (energy against the model)")
    rows = []
    for f in sorted(glob.glob(f"{w}/r/*/*/*/report.json")):
        p = load(f).get("prediction")
        if not p or p.get("energy_error_pct") is None or p.get("target_energy_j") is None:
            continue
        units_w = p["plain_energy_j"] / (p["plain_us"] * 1e-6)
        slower = [t for t in p["terms"] if t["what"].startswith("kernels slower")]
        us = sum(t["us"] for t in slower)
        at_idle = sum(t.get("energy_j") or 0.0 for t in slower)
        at_units = us * 1e-6 * units_w
        taken_out = (p.get("lead_in_units") or {}).get("round_kernels_j") or 0.0
        scale = at_units / at_idle if at_idle else 1.0
        e = p["predicted_energy_j"] + at_units - at_idle - taken_out * (scale - 1.0)
        rows.append((f.split("/")[-2], p["energy_error_pct"], 100 * (e / p["target_energy_j"] - 1)))
    within = [sum(abs(r[i]) <= 3 for r in rows) for i in (1, 2)]
    mean = [sum(abs(r[i]) for r in rows) / len(rows) for i in (1, 2)]
    print(f"  {len(rows)} answers within 3 %: {within[0]} at idle (kc), {within[1]} at the units' power; "
          f"mean |error| {mean[0]:.2f} against {mean[1]:.2f} %")


if __name__ == "__main__":
    w = sys.argv[1]
    split(w)
    resnext101(w)
    lead_ins_at_their_power(w)
    led_in_place_of_round(w)
    slower_kernels_at_the_units_power(w)
