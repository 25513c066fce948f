"""Which of the round's lead-ins slows a unit in it: the isolated pass again, time only, on
a kept plan, keeping only some lead-ins (`kc exec --round-lead-ins-only`), halving the
candidates while the unit's kernels in the round stay nearer their time with every
lead-in than without any. Run on the GPU machine by run.sh (session 46):

    python bisect_lead_ins.py KC PLAN OUTDIR LABEL [MAX_RUNS [KC-EXEC-FLAGS...]]

LABEL picks the unit by a substring of its label (the first unit that holds it). Each run
writes OUTDIR/lead.K.json and a line to OUTDIR/bisect.txt: the lead-ins kept, the unit's
kernels per invocation in the round (CUPTI, as recorded) and alone."""
import json
import subprocess
import sys
import time
from pathlib import Path

kc, plan, out, label = sys.argv[1:5]
max_runs = int(sys.argv[5]) if len(sys.argv) > 5 else 12
extra = sys.argv[6:]
out = Path(out)
out.mkdir(parents=True, exist_ok=True)
log = (out / "bisect.txt").open("a")
runs = 0


def measure(kept, tag):
    """The unit's kernels in the round and alone with only `kept` lead-ins (None: the
    argument lists every step, so every lead-in stays), and the lead-ins the round kept."""
    global runs
    runs += 1
    f = out / f"lead.{runs}.json"
    # One argument per step: a single argument is held to 128 KiB.
    only = [str(s) for s in (range(50000) if kept is None else kept)]
    t = time.time()
    rc = subprocess.run([kc, "exec", plan, "--isolated", "--verify", "--no-energy", *extra,
                         "-o", str(f), "--json", "--round-lead-ins-only", *only],
                        stdout=subprocess.DEVNULL,
                        stderr=(out / f"lead.{runs}.log").open("w"), timeout=200).returncode
    if rc != 0 or not f.exists():
        log.write(f"{tag} run {runs} rc={rc}\n")
        log.flush()
        return None, None
    d = json.loads(f.read_text())
    units = {u["id"]: u["label"] for u in d["units"]}
    tr = d["isolated"]["transitions"]
    row = next(k for k in tr["round_unit_kernels"] if label in units[k["unit"]])
    note = next(n for n in d["notes"] if "--round-lead-ins-only" in n)
    steps = json.loads(note[note.index("["):note.index("]") + 1])
    log.write(f"{tag} run {runs} ({time.time() - t:.0f} s): {len(steps)} lead-ins {steps}: "
              f"round {row['round_us']:.1f} us, alone {row['alone_us']:.1f} us\n")
    log.flush()
    return row["round_us"], steps


r_all, lead_ins = measure(None, "all")
r_none, _ = measure([], "none")
if r_all is None or r_none is None:
    sys.exit(1)
mid = (r_all + r_none) / 2
log.write(f"threshold {mid:.1f} us (all {r_all:.1f}, none {r_none:.1f})\n")
cands = lead_ins
while len(cands) > 1 and runs < max_runs:
    a, b = cands[: len(cands) // 2], cands[len(cands) // 2:]
    r, _ = measure(a, "half")
    if r is not None and r > mid:
        cands = a
        continue
    r, _ = measure(b, "half")
    if r is not None and r > mid:
        cands = b
        continue
    log.write(f"neither half of {cands} alone slows it: more than one lead-in does\n")
    break
if len(cands) == 1 and runs < max_runs:
    measure([s for s in lead_ins if s != cands[0]], f"all but {cands[0]}")
log.write(f"candidates left: {cands}\n")
