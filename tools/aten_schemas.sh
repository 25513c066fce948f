#!/usr/bin/env bash
# Extracts libtorch's aten operator registry (every schema, and whether its kernel is a
# composite "default" implementation) from the libtorch headers into data/aten_schemas.txt.gz,
# which kc embeds: lowering resolves a recorded op to its schema without libtorch, in CI.
#
# Usage: tools/aten_schemas.sh [LIBTORCH]   (default .libtorch/torch, see setup_libtorch.sh)
# Output lines: `SCHEMA<TAB>default=True|False`, in the header's order.
set -euo pipefail
cd "$(dirname "$0")/.."
lt=${1:-.libtorch/torch}
src="$lt/include/ATen/RegistrationDeclarations.h"
[ -f "$src" ] || { echo "aten_schemas: $src not found (run tools/setup_libtorch.sh)" >&2; exit 1; }
version=$(cat "$lt/VERSION" 2>/dev/null || echo unknown)
{
    echo "# libtorch $version aten operator registry, from ATen/RegistrationDeclarations.h"
    python3 - "$src" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    i = line.find("// {")
    if i < 0:
        continue
    d = json.loads(line[i + 3:])
    print(f"{d['schema']}\tdefault={d.get('default', 'False')}")
PY
} | gzip -9n > data/aten_schemas.txt.gz
echo "data/aten_schemas.txt.gz: $(zcat data/aten_schemas.txt.gz | grep -vc '^#') schemas (libtorch $version)"
