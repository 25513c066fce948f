#!/usr/bin/env python3
"""The file of answers `kc report --method-spread` reads: for each answer, its reference
entry (the model's name in reference.json, which the report leaves out of its own spread)
and its prediction's errors against the model, percent, from kc's report.json files (the
chart's, as chart.sh regenerates them). Format: docs/FORMATS.md.

    python3 tools/prediction_residuals.py OUT.json SOURCE LABEL=REPORT.json [LABEL=REPORT.json ...]

SOURCE says where the answers come from (it is printed beside every spread made of them).
"""
import json
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, source, answers = sys.argv[1], sys.argv[2], []
    for arg in sys.argv[3:]:
        label, _, path = arg.partition("=")
        r = json.load(open(path))
        p = r.get("prediction") or {}
        entry = ((r.get("model") or {}).get("reference") or {}).get("entry")
        if p.get("error_pct") is None or not entry:
            sys.exit(f"{path}: no prediction against a reference entry")
        answers.append({"entry": entry, "label": label, "time_error_pct": p["error_pct"],
                        "energy_error_pct": p.get("energy_error_pct")})
    with open(out, "w") as f:
        json.dump({"source": source, "answers": answers}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
