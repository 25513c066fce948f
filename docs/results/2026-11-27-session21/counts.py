#!/usr/bin/env python3
"""The counts the README quotes, for chart.sh and h100.sh: of the LABEL=REPORT.json answers
given, how many have the prediction within 2 % in time, 3 % in energy, both, and the plain
sum the same. Prints the misses (every model with --every), then one total line, and (since
session 31) how many misses carry the report's replay caveat: kc's own graph missed the
model beyond the targets; and (since session 50) which answers' model graph did not compute
what its eager step does (capture.py's replay check, the report's target caveat).
    python3 counts.py [--every] LABEL=REPORT.json ..."""
import json, sys

args = sys.argv[1:]
every = args[:1] == ["--every"]
args = args[1:] if every else args
n = t = e = b = pt = pe = 0
replay_misses = []
off_eager_labels = []
for a in args:
    label, path = a.split("=", 1)
    p = json.load(open(path))["prediction"]
    n += 1
    replay = p.get("replay_caveat")
    ti, en = abs(p["error_pct"]) <= 2.0, abs(p["energy_error_pct"]) <= 3.0
    t += ti; e += en; b += ti and en
    pt += abs(p["plain_error_pct"]) <= 2.0; pe += abs(p["plain_energy_error_pct"]) <= 3.0
    if every:
        print("  %-24s plain %+5.1f / %+5.1f %%, prediction %+5.1f / %+5.1f %%%s" % (
            label, p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"], p["energy_error_pct"],
            "" if ti and en else "  (miss)"))
    off_eager = "did not compute what the model's eager step does" in (p.get("target_caveat") or "")
    if off_eager:
        off_eager_labels.append(label)
    if not every and not (ti and en):
        print("  miss: %-30s time %+5.1f %%, energy %+5.1f %%%s%s" % (label, p["error_pct"], p["energy_error_pct"],
              " (kc's graph misses the model too)" if replay else "",
              " (the model's graph did not compute its eager step's output)" if off_eager else ""))
    if replay and not (ti and en):
        replay_misses.append(label)
print("%d models: time within 2 %%: %d, energy within 3 %%: %d, both: %d; the plain sum: time %d, energy %d" % (n, t, e, b, pt, pe))
if off_eager_labels:
    print("%d %s whose model graph did not compute what its eager step does (its target may not be the model's): %s" % (
        len(off_eager_labels), "answer" if len(off_eager_labels) == 1 else "answers", ", ".join(off_eager_labels)))
if replay_misses:
    print("%d of the misses where kc's own graph missed the model beyond the targets: %s" % (
        len(replay_misses), ", ".join(replay_misses)))
