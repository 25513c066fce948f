#!/usr/bin/env bash
# The large-input ingest benchmark of issue 2: a 510 MB trace made by repeating the real
# GPT-2 training trace 40 times, ingested RUNS times; prints wall time, MB/s and peak RSS
# of each run and the median. Usage: benches/ingest_big.sh [RUNS] (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
big=${BIG:-/tmp/kc-bench/big.json}
mkdir -p "$(dirname "$big")"
if [ ! -f "$big" ]; then
  python3 ../shared/tools/scale_trace.py ../shared/traces/h100/gpt2_train_bf16.pt.trace.json.gz 40 "$big"
fi
cargo build --release --quiet
bytes=$(stat -c %s "$big")
echo "input: $big ($bytes bytes)"
walls=()
for i in $(seq "$runs"); do
  out=$( { /usr/bin/time -f "%e %M" target/release/kc ingest "$big" -o "$big.kcir" --json > /dev/null; } 2>&1 | tail -1)
  wall=${out% *}; rss=${out#* }
  walls+=("$wall")
  awk -v w="$wall" -v r="$rss" -v b="$bytes" 'BEGIN { printf "run: %.2f s  %.0f MB/s  peak RSS %.0f MiB\n", w, b / w / 1e6, r / 1024 }'
done
printf '%s\n' "${walls[@]}" | sort -n | awk -v b="$bytes" '{ a[NR] = $1 } END { m = a[int((NR + 1) / 2)]; printf "median: %.2f s  %.0f MB/s\n", m, b / m / 1e6 }'
