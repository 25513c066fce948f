"""Share of nvidia-smi's 200 ms samples (smi.csv) with the software power cap active
(clocks_event_reasons bit 0x4), inside the windows of kc's graph replay and inside the
units' energy windows alone, per answer of session 29's calls. The samples inside a short
window also hold power from around it, so this says where the cap was seen, not how much.
Run from the repository root: python3 docs/results/2026-11-28-session29/capflag.py"""
import datetime, glob, json, os, tarfile, tempfile

here = os.path.dirname(os.path.abspath(__file__))


def ms(t):
    d = datetime.datetime.strptime(t, "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
    return d.timestamp() * 1000


with tempfile.TemporaryDirectory() as w:
    for call in sorted(glob.glob(f"{here}/call*.txz")):
        with tarfile.open(call) as t:
            t.extractall(w, filter="data")
    for part in sorted(glob.glob(f"{w}/*")):
        rows = []
        for line in open(f"{part}/smi.csv"):
            f = [x.strip() for x in line.split(",")]
            if len(f) < 5:
                continue
            try:
                rows.append((ms(f[0]), float(f[2].split()[0]), int(f[4], 16)))
            except ValueError:
                pass

        def inside(ws):
            n = c = 0
            for t, _, r in rows:
                if any(a <= t <= b for a, b in ws):
                    n += 1
                    c += r & 4 != 0
            return c, n

        for d in sorted(glob.glob(f"{part}/*.kc/*")):
            try:
                g = json.load(open(f"{d}/plan.graph.json"))
                i = json.load(open(f"{d}/plan.isolated.context.json"))
            except FileNotFoundError:
                continue
            gw = [(x["start_unix_ms"], x["end_unix_ms"]) for x in g["windows"]]
            uw = [(x["start_unix_ms"], x["end_unix_ms"]) for x in i["windows"] if x.get("label", "").startswith("unit")]
            (c, n), (c2, n2) = inside(gw), inside(uw)
            print(f"{os.path.relpath(d, w)}: cap active in {c} of {n} samples inside kc's graph windows, {c2} of {n2} inside the units' windows")
