"""A hypothesis from calls 1 and 3 of session 46, tested on models it was not formed on: the
round's lead-in right before a unit whose graph holds a memory allocation (cuBLAS's
workspace for the output projection's GEMMs) slows the fused optimizer at the cycle's end.
The isolated pass again, time only, with every lead-in but those
(`kc exec --round-lead-ins-only`):

    python skip_lead_ins.py KC PLANPEEK PLAN RESULTS OUT LABEL

RESULTS is `kc run`'s isolated results for PLAN (its notes name the units whose graph holds
a memory allocation); PLANPEEK prints the round's entries (planpeek/). Writes OUT (the
results) and prints the unit's kernels in the round and alone."""
import json
import subprocess
import sys

kc, peek, plan, results, out, label = sys.argv[1:7]
d = json.loads(open(results).read())
alloc = {int(n.split()[1]) for n in d["notes"]
         if n.startswith("unit ") and "memory allocation" in n}
entries = [l.split(maxsplit=3) for l in subprocess.run([peek, plan], capture_output=True,
                                                        text=True, check=True).stdout.splitlines()]
lead = [int(e[1]) for e in entries if e[0] == "L"]
drop = [int(a[1]) for a, b in zip(entries, entries[1:])
        if a[0] == "L" and b[0] == "C" and int(b[2]) in alloc]
print(f"units with a memory allocation {sorted(alloc)}; lead-ins {lead}; dropped {drop}")
keep = [str(s) for s in lead if s not in drop]
rc = subprocess.run([kc, "exec", plan, "--isolated", "--verify", "--no-energy", "-o", out,
                     "--json", "--round-lead-ins-only", *keep],
                    stdout=subprocess.DEVNULL, timeout=200).returncode
r = json.loads(open(out).read())
units = {u["id"]: u["label"] for u in r["units"]}
for k in r["isolated"]["transitions"]["round_unit_kernels"]:
    if label in units[k["unit"]]:
        print(f"rc={rc}: {label} round {k['round_us']:.1f} us, alone {k['alone_us']:.1f} us")
print([n for n in r["notes"] if "--round-lead-ins-only" in n])
