#!/usr/bin/env python3
"""Writes the part of an Inductor cache that a compiled trace's Triton kernels need (for a
small committed fixture or to ship with a trace): the generated modules the trace's
kernels name (`kernel_file`), the autotuner's `.best_config` files beside them, and per
compiled config of those modules its metadata JSON, cubin, Triton IR and PTX. Python
launchers, LLVM IR and everything else stay behind.

    tools/inductor_subset.py TRACE.pt.trace.json.gz CACHE(.tar.gz|DIR) OUT.tar.gz
"""
import gzip
import io
import json
import os
import sys
import tarfile


def members(cache):
    """(path, bytes) of every file of a cache directory or archive."""
    if os.path.isdir(cache):
        for root, _, files in os.walk(cache):
            for f in files:
                p = os.path.join(root, f)
                with open(p, "rb") as fh:
                    yield os.path.relpath(p, cache), fh.read()
    else:
        with tarfile.open(cache) as t:
            for m in t.getmembers():
                if m.isfile():
                    yield m.name, t.extractfile(m).read()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    trace, cache, out = sys.argv[1:]
    opener = gzip.open if trace.endswith(".gz") else open
    with opener(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    modules = {e["args"]["kernel_file"].rsplit("/", 1)[-1] for e in events
               if isinstance(e.get("args"), dict) and "kernel_file" in e["args"]}
    files = dict(members(cache))
    module_dirs = {p.rsplit("/", 2)[-2] for p in files if p.rsplit("/", 1)[-1] in modules}
    keep = {}
    for p, b in files.items():
        name = p.rsplit("/", 1)[-1]
        if name in modules or (name.endswith(".best_config") and p.rsplit("/", 2)[-2] in module_dirs):
            keep[p] = b
    # Binary directories whose Triton IR names one of the modules.
    dirs = set()
    for p, b in files.items():
        if "/triton/" in "/" + p and p.endswith((".ttir", ".source")):
            head = b[:400].decode("utf-8", "replace")
            if any(m in head for m in modules):
                dirs.add(p.rsplit("/", 1)[0])
    for p, b in files.items():
        d, name = p.rsplit("/", 1) if "/" in p else ("", p)
        if d in dirs and name.endswith((".json", ".cubin", ".ttir", ".ptx")) and not name.startswith("__grp__"):
            keep[p] = b
    with tarfile.open(out, "w:gz") as t:
        for p in sorted(keep):
            info = tarfile.TarInfo(p)
            info.size = len(keep[p])
            t.addfile(info, io.BytesIO(keep[p]))
    print(f"{out}: {len(keep)} files ({len(modules)} modules, {len(dirs)} compiled configs), "
          f"{os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main()
