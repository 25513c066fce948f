#!/usr/bin/env bash
# Extracts libtorch's aten operator registry from the libtorch headers into
# data/aten_schemas.txt.gz, which kc embeds: lowering resolves a recorded op to its schema
# without libtorch, in CI.
#
# Each line: `SCHEMA<TAB>cuda_out=True|False|-`. For an out form (an overload whose
# keyword-only arguments end in written tensors) the flag says whether libtorch registers a
# CUDA kernel for it (ATen/ops/<op>_cuda_dispatch.h declares its `_outf` with the same
# argument kinds); out forms without one are generated as "run the functional op, then copy
# into out" and would add copy kernels the model never ran. Other overloads get `-`.
#
# Usage: tools/aten_schemas.sh [LIBTORCH]   (default .libtorch/torch, see setup_libtorch.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
lt=${1:-.libtorch/torch}
src="$lt/include/ATen/RegistrationDeclarations.h"
[ -f "$src" ] || { echo "aten_schemas: $src not found (run tools/setup_libtorch.sh)" >&2; exit 1; }
version=$(cat "$lt/VERSION" 2>/dev/null || echo unknown)
{
    echo "# libtorch $version aten operator registry, from ATen/RegistrationDeclarations.h and ATen/ops/*_cuda_dispatch.h"
    python3 - "$src" "$lt/include/ATen/ops" <<'PY'
import json, os, re, sys

def split_top(s):
    """Splits on commas outside <>, () and []."""
    out, depth, cur = [], 0, ""
    for c in s:
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip()); cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out

def cpp_kind(p):
    t = p.rsplit(" ", 1)[0] if " " in p else p
    if "List<::std::optional<at::Tensor>>" in t or "TensorList" in t or "ITensorListRef" in t:
        return "L"
    if "Tensor" in t:
        return "T"
    if "Scalar &" in t or "optional<at::Scalar>" in t:
        return "S"
    if "ArrayRef" in t or "std::array" in t:
        return "A"
    return "V"

def schema_kind(t):
    t = re.sub(r"\([^)]*\)", "", t).strip()
    if t.startswith("Tensor") and "[" in t:
        return "L"
    if t.startswith("Tensor"):
        return "T"
    if re.fullmatch(r"Scalar\??", t):
        return "S"
    if "[" in t:
        return "A"
    return "V"

def schema_args(schema):
    inner = schema[schema.index("(") + 1: schema.index(") ->")]
    kinds = []
    for a in split_top(inner):
        if a == "*":
            continue
        kinds.append(schema_kind(a.rsplit(" ", 1)[0].split("=")[0]))
    return kinds, inner

def outf_decls(opsdir, base):
    path = os.path.join(opsdir, f"{base}_cuda_dispatch.h")
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path, encoding="utf-8"):
        m = re.search(rf"\b{re.escape(base)}(_symint)?_outf\((.*)\);", line)
        if m:
            out.append([cpp_kind(p) for p in split_top(m.group(2))])
    return out

src, opsdir = sys.argv[1], sys.argv[2]
for line in open(src, encoding="utf-8"):
    i = line.find("// {")
    if i < 0:
        continue
    schema = json.loads(line[i + 3:])["schema"]
    kinds, inner = schema_args(schema)
    is_out = re.search(r"\*.*\(\w!\)\s+\w+\s*$", inner) is not None
    flag = "-"
    if is_out:
        base = schema.split("::", 1)[1].split("(", 1)[0].split(".", 1)[0]
        flag = str(kinds in outf_decls(opsdir, base))
    print(f"{schema}\tcuda_out={flag}")
PY
} | gzip -9n > data/aten_schemas.txt.gz
echo "data/aten_schemas.txt.gz: $(zcat data/aten_schemas.txt.gz | grep -vc '^#') schemas (libtorch $version), $(zcat data/aten_schemas.txt.gz | grep -c 'cuda_out=True') out forms with a CUDA kernel"
