#!/bin/bash
# The H100 chart (docs/prediction_h100.svg), redrawn in session 30: each model's latest H100
# answer in kc's default configuration from sessions 22-25, every one against its own CUDA
# graph measured back to back in the same call, its report regenerated with the committed
# kc from the results files (so every answer holds the power limit's bound of session 24
# and, where its results measured the spin's slope, session 25's temperature term).
# Session 26's chart (h100.sh there) with the six models of session 28's calls 3-4 (kc-c,
# kc's defaults) added: GPT-2's and ResNet-50's training steps, DenseNet-121,
# MobileNetV3-L, RegNetY-3.2GF and MaxViT-T. Calls that ran a diagnostic beside the
# defaults (session 26; session 28's calls 1, 2 and 5) are not taken. Session 29: the
# answers with each unit over its steps' values (kc's default since session 29) of GPT-2's
# and ResNet-50's training steps (calls 1-2), T5's graph (call 3) and DenseNet-121 (call 4)
# replace those models' earlier ones. Session 30: EfficientNet-V2-S (call 2, kc-i: a
# restored unit's kernels alone from its restoring graph), DenseNet-121 and the compiled
# ConvNeXt-T (call 3, kc-j) and T5's graph (call 4, kc-j) replace their earlier answers,
# and EfficientNet-B0 (call 3) is added; call 1 (rounds at spread runs, an A/B of a diagnostic) is not taken. Run from
# the repository root after `cargo build --release`:
#   bash docs/results/2026-11-28-session30/h100.sh
set -eu
KC=${KC:-target/release/kc}
r=$(dirname "$0")/.. w=$(mktemp -d)
x() { mkdir -p $w/$2; tar xJf "$r/$1/$2.txz" -C $w/$2; }
x 2026-11-27-session22 call1-a-kc-i; x 2026-11-27-session22 call3-c-kc-i
x 2026-11-27-session23 call1-a-kc-j; x 2026-11-27-session23 call4-e-kc-m
x 2026-11-27-session24 call1-a-kc-p; x 2026-11-27-session24 call2-b-kc-p; x 2026-11-27-session24 call4-d-kc-p
x 2026-11-27-session24 call5-e-kc-p; x 2026-11-27-session24 call7-g-kc-q
x 2026-11-28-session25 call8-h-kc-w
x 2026-11-28-session28 call3-f-kc-c; x 2026-11-28-session28 call4-g-kc-c
x 2026-11-28-session29 call1-k-kc-d; x 2026-11-28-session29 call2-l-kc-e
x 2026-11-28-session30 call2-c-kc-i; x 2026-11-28-session30 call3-d-kc-j; x 2026-11-28-session30 call4-e-kc-j
args=()
rep() { # LABEL CALL/PART NAME
  local dir=$w/$2/$3.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$2/$3 --json > /dev/null
  args+=("$1=$w/r/$2/$3/report.json")
}
rep "Swin V2-T (s24)" call2-b-kc-p/b swin_v2_t; rep "Wide ResNet-50-2 step (s24)" call2-b-kc-p/b wide_resnet50_train
rep "ViT-L/16 (s24)" call2-b-kc-p/b vit_l_16; rep "ConvNeXt-B (s24)" call4-d-kc-p/d convnext_base
rep "LLaMA decode graph (s24)" call4-d-kc-p/d llama_decode_graph; rep "VGG-16-BN (s24)" call4-d-kc-p/d vgg16_bn
rep "ResNeXt-50 step (s25)" call8-h-kc-w/h resnext50_train; rep "ViT-B/16 TF32 (s24)" call7-g-kc-q/g vit_b_16_tf32
rep "T5 graph (s30)" call4-e-kc-j/e t5_graph; rep "EfficientNet-V2-S (s30)" call2-c-kc-i/c effnet_v2_s
rep "BERT step graph (s24)" call5-e-kc-p/e bert_train_graph
rep "Qwen2 decode graph (s24)" call5-e-kc-p/e qwen2_decode_graph; rep "GPT-2 decode graph (s24)" call5-e-kc-p/e gpt2_decode_graph
rep "BERT graph (s23)" call1-a-kc-j/a bert_infer_graph; rep "Swin-T (s23)" call4-e-kc-m/e swin_t
rep "Qwen3-MoE decode graph (s22)" call3-c-kc-i/c qwen3_moe_decode_graph
rep "ConvNeXt-T compiled (s30)" call3-d-kc-j/d convnext_tiny_compiled
rep "GPT-2 step graph (s29)" call1-k-kc-d/k gpt2_train_graph; rep "ResNet-50 step, SGD (s29)" call2-l-kc-e/l resnet50_train_sgd
rep "DenseNet-121 (s30)" call3-d-kc-j/d densenet121; rep "EfficientNet-B0 (s30)" call3-d-kc-j/d effnet_b0; rep "MobileNetV3-L (s28)" call4-g-kc-c/g mobilenet_v3_large
rep "RegNetY-3.2GF (s28)" call4-g-kc-c/g regnet_y_3_2gf; rep "MaxViT-T (s28)" call4-g-kc-c/g maxvit_t
python3 tools/prediction_chart.py --device H100 docs/prediction_h100.svg "${args[@]}"
python3 "$r/2026-11-27-session21/counts.py" --every "${args[@]}"
echo "${#args[@]} answers"
rm -rf "$w"
