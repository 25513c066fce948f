#!/bin/bash
# The H100 chart (docs/prediction_h100.svg): kc's current build (session 21, kc-g and kc-h)
# on eight models on the H100, each captured and answered by `kc run` and compared with its
# own CUDA graph measured back to back in the same call (calls 1, 2 and 4; calls 1 and 2 ran
# on different H100s). kc's previous H100 answers were session 15's, with an older
# prediction. Reports regenerated with the committed kc from the results files. Run from the
# repository root after `cargo build --release`:
#   bash docs/results/2026-11-27-session21/h100.sh
set -eu
KC=${KC:-target/release/kc}
s21=$(dirname "$0") w=$(mktemp -d)
for c in call1-h-kc-g call2-i-kc-g call4-k-kc-h; do mkdir -p $w/$c; tar xJf "$s21/$c.txz" -C $w/$c; done
args=()
rep() { # LABEL CALL/PART NAME
  local dir=$w/$2/$3.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$2/$3 --json > /dev/null
  args+=("$1=$w/r/$2/$3/report.json")
}
rep "BERT graph" call4-k-kc-h/k bert_infer_graph; rep "BERT step graph" call4-k-kc-h/k bert_train_graph
rep "ResNeXt-50 step" call1-h-kc-g/h resnext50_train; rep "ViT-B/16 TF32" call1-h-kc-g/h vit_b_16_tf32
rep "Qwen3-MoE decode graph" call2-i-kc-g/i qwen3_moe_decode_graph; rep "T5 graph" call2-i-kc-g/i t5_graph
rep "ConvNeXt-T compiled" call2-i-kc-g/i convnext_tiny_compiled; rep "Qwen2 decode graph" call2-i-kc-g/i qwen2_decode_graph
python3 tools/prediction_chart.py --device H100 docs/prediction_h100.svg "${args[@]}"
python3 "$s21/counts.py" --every "${args[@]}"
rm -rf "$w"
