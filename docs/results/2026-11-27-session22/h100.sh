#!/bin/bash
# The H100 chart (docs/prediction_h100.svg): kc-i (session 22: the round's kernels recorded
# over launches back to back) on ten models on the H100, each captured and answered by
# `kc run` and compared with its own CUDA graph measured back to back in the same call
# (calls 1, 3 and 4; each on another H100). Session 21's eight, again with this build, and
# two families the table lacked (Swin-T, GPT-2's decode graph). Reports regenerated with
# the committed kc from the results files. Run from the repository root after
# `cargo build --release`:
#   bash docs/results/2026-11-27-session22/h100.sh
set -eu
KC=${KC:-target/release/kc}
s22=$(dirname "$0") w=$(mktemp -d)
for c in call1-a-kc-i call3-c-kc-i call4-d-kc-i; do mkdir -p $w/$c; tar xJf "$s22/$c.txz" -C $w/$c; done
args=()
rep() { # LABEL CALL/PART NAME
  local dir=$w/$2/$3.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$2/$3 --json > /dev/null
  args+=("$1=$w/r/$2/$3/report.json")
}
rep "BERT graph" call3-c-kc-i/c bert_infer_graph; rep "BERT step graph" call3-c-kc-i/c bert_train_graph
rep "ResNeXt-50 step" call3-c-kc-i/c resnext50_train; rep "Qwen3-MoE decode graph" call3-c-kc-i/c qwen3_moe_decode_graph
rep "ViT-B/16 TF32" call1-a-kc-i/a vit_b_16_tf32; rep "T5 graph" call1-a-kc-i/a t5_graph
rep "ConvNeXt-T compiled" call1-a-kc-i/a convnext_tiny_compiled; rep "Qwen2 decode graph" call1-a-kc-i/a qwen2_decode_graph
rep "Swin-T" call4-d-kc-i/d swin_t; rep "GPT-2 decode graph" call4-d-kc-i/d gpt2_decode_graph
python3 tools/prediction_chart.py --device H100 docs/prediction_h100.svg "${args[@]}"
python3 "$s22/../2026-11-27-session21/counts.py" --every "${args[@]}"
rm -rf "$w"
