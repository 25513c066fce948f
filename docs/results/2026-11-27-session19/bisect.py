#!/usr/bin/env python3
"""Session 19, calls 5-7: which of T5's recorded values make kc's graph of it fault. No GPU
here; run from the repository root after `cargo build --release`:
    python3 docs/results/2026-11-27-session19/bisect.py OUTDIR
From call 3's tarball (T5's CUDA-graph capture, its ET and the values capture.py recorded
for it, all 259 tensors), it writes one values file per subset (by op; by the one
`aten::add` input group) into OUTDIR and builds each subset's plan with kc (ingest --capture
--shapes --values, lower, plan): OUTDIR/NAME.kcplan. Built with kc at 1e0734d (before
plans took only the values that steer kernels: `git checkout 1e0734d && cargo build
--release`), these are the plans bisect.sh replayed on the
H200 (`VARIANTS="..." bash docs/results/2026-11-27-session19/bisect.sh`, the plans in
.device/bis). Which faulted is in bisect/call5-7.txz (summary.txt); call 8 ran `ints` under
compute-sanitizer (bisect/call8.txz: a device-side assertion in a kernel of the launch, then
the SIGSEGV in cuGraphLaunch)."""
import collections, gzip, json, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", "..", ".."))
kc = os.path.join(root, "target", "release", "kc")
out = os.path.abspath(sys.argv[1])
os.makedirs(out, exist_ok=True)
w = tempfile.mkdtemp()
subprocess.run(["tar", "xJf", os.path.join(here, "call3-c-kc-b.txz"), "-C", w], check=True)
c = os.path.join(w, "c")

raw = open(os.path.join(c, "t5_graph_capture.values.bin"), "rb").read()
n = int.from_bytes(raw[8:16], "little")
header = json.loads(raw[16:16 + n])
blobs = raw[16 + n:]
et = json.load(gzip.open(os.path.join(c, "t5_graph_capture.et.json.gz")))
op = {x["id"]: x["name"] for x in et["nodes"]}
entries = header["tensors"]
ints = [e for e in entries if e["dtype"] != "bool"]
main = ["aten::where", "aten::add", "aten::add_", "aten::minimum", "aten::copy_", "aten::fill_"]
print("recorded tensors by op:", dict(collections.Counter(op[e["node"]] for e in entries)))

subsets = {
    "all": entries,
    "ints": ints,
    "bools": [e for e in entries if e["dtype"] == "bool"],
    "rest": [e for e in entries if op[e["node"]] not in main],
}
for m in main:
    short = m.split("::")[1]
    subsets[short] = [e for e in entries if op[e["node"]] == m]
    subsets["no_" + short] = [e for e in ints if op[e["node"]] != m]
subsets["no_rest"] = [e for e in ints if op[e["node"]] in main]
# The integer inputs of `aten::add`, by (shape, input, blob): each left out of `ints` in turn.
groups = collections.defaultdict(list)
for e in ints:
    if op[e["node"]] == "aten::add":
        groups[(str(e["shape"]), e["input"], e["offset"])].append(e)
for k, (key, group) in enumerate(sorted(groups.items())):
    subsets["noadd%d" % k] = [e for e in ints if e not in group]
    print("noadd%d leaves out add input %s, shape %s, nodes %s" % (
        k, key[1], key[0], [e["node"] for e in group]))

for name, chosen in subsets.items():
    h = dict(header)
    h["tensors"] = chosen
    hb = json.dumps(h).encode()
    values = os.path.join(out, name + ".values.bin")
    with open(values, "wb") as f:
        f.write(b"KCVALUE1" + len(hb).to_bytes(8, "little") + hb + blobs)
    ir = os.path.join(out, name + ".kcir")
    low = os.path.join(out, name + ".lowered.kcir")
    subprocess.run([kc, "ingest", os.path.join(c, "t5_graph.pt.trace.json.gz"),
                    "--capture", os.path.join(c, "t5_graph_capture.pt.trace.json.gz"),
                    "--shapes", os.path.join(c, "t5_graph_capture.et.json.gz"),
                    "--values", values, "-o", ir], check=True, capture_output=True)
    subprocess.run([kc, "lower", ir, "--tiers", "-o", low], check=True, capture_output=True)
    subprocess.run([kc, "plan", low, "-o", os.path.join(out, name + ".kcplan")], check=True,
                   capture_output=True)
    print("%-10s %3d tensors" % (name, len(chosen)))

print()
print("== On the H200 (calls 5-7): rc 139 is the SIGSEGV")
for t in ("call5", "call6", "call7"):
    d = os.path.join(w, t)
    os.makedirs(d)
    subprocess.run(["tar", "xJf", os.path.join(here, "bisect", t + ".txz"), "-C", d], check=True)
    print(t + ": " + ", ".join(l.split(" ms")[0].rsplit(" ", 1)[0]
                              for l in open(os.path.join(d, "bisect", "summary.txt"))))
