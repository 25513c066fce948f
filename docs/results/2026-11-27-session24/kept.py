"""Every kept answer of sessions 17-24, answered again by the committed kc: each call's
tarball unpacked, and each model's isolated results (context cache) reported against the
model measured in the same call (`kc report --reference`), the H100 plans replayed on an
H200 among them. Shared by limit.py and unitpower.py; run from the repository root after
`cargo build --release` (KC= another kc)."""
import glob, json, os, subprocess, tarfile, tempfile

KC = os.environ.get("KC", "target/release/kc")
HERE = os.path.dirname(os.path.abspath(__file__))


def answers():
    """(call, model, prediction, isolated results) of each answer whose report has a
    prediction from parts with energy against the model's: `call` as "s24/call1-a-kc-p",
    `model` the entry name, "(H100 plan)" added to a plan replayed on another GPU."""
    work = tempfile.mkdtemp()
    for n in range(17, 25):
        s = f"{HERE}/../2026-11-27-session{n}"
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
                p = json.load(open(f"{out}/report.json")).get("prediction") or {}
                if not p.get("terms_measured") or p.get("predicted_energy_j") is None or not p.get("target_energy_j"):
                    continue
                yield call, name + (" (H100 plan)" if cross else ""), p, json.load(open(iso))


def limit_term(p):
    """The power limit's term of a prediction, or None where it did not apply."""
    return next((x for x in p["terms"] if x["what"].startswith("the GPU's power limit")), None)
