#!/usr/bin/env bash
# Ingest, lower and plan the shared H100 traces (and a synthetic 1000-memset trace) into
# DIR, for GPU runs: `tools/prepare_h100.sh .device/plans`.
set -euo pipefail
out=${1:?usage: prepare_h100.sh OUTDIR}
kc=${KC:-target/release/kc}
shared=${SHARED:-../shared}
mkdir -p "$out"
for t in bloom560m_seq5 gpt2_train_bf16 llama7b8l_decode resnet50_b32 multistream_gemm_bf16; do
  "$kc" ingest "$shared/traces/h100/$t.pt.trace.json.gz" -o "$out/$t.kcir" --json > "$out/$t.ingest.json"
  "$kc" lower --tiers "$out/$t.kcir" -o "$out/$t.lowered.kcir" --json > "$out/$t.lower.json"
  "$kc" plan "$out/$t.lowered.kcir" -o "$out/$t.kcplan" --json > "$out/$t.plan.json"
done
python3 "$(dirname "$0")/synth_memset_trace.py" 1000 "$out/memsets1000.json"
"$kc" ingest "$out/memsets1000.json" -o "$out/memsets1000.kcir" --json > /dev/null
"$kc" lower --tiers "$out/memsets1000.kcir" -o "$out/memsets1000.lowered.kcir" --json > /dev/null
"$kc" plan "$out/memsets1000.lowered.kcir" -o "$out/memsets1000.kcplan" --json > "$out/memsets1000.plan.json"
rm -f "$out"/*.kcir "$out/memsets1000.json"
ls -la "$out"
