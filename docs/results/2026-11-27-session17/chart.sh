#!/bin/bash
# The README's chart (docs/prediction.svg): the 17 models of session 17 on the H200, each
# answered by `kc run` with this session's defaults (the round restoring the model's values
# at every launch; units that alone met the power cap measured at a duty cycle) and compared
# with its own CUDA graph measured in the same call by capture.py counting completed calls.
# Calls 2-5; Qwen2 from call 5 (its reference queued deeper). Reports regenerated with the
# committed kc from the results files. Run from the repository root after
# `cargo build --release`: bash docs/results/2026-11-27-session17/chart.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") w=$(mktemp -d)
for c in call2-a-kc-s call3-b-kc-t call4-c-kc-t call5-d-kc-t; do mkdir -p $w/$c; tar xJf "$here/$c.txz" -C $w/$c; done
args=()
rep() { # LABEL CALL/PART NAME
  local dir=$w/$2/$3.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$3 --json > /dev/null
  args+=("$1=$w/r/$3/report.json")
}
rep "T5 graph" call2-a-kc-s/a t5_graph; rep "VGG-16-BN" call2-a-kc-s/a vgg16_bn; rep "ViT-B/32" call2-a-kc-s/a vit_b_32
rep "ResNet-50" call2-a-kc-s/a resnet50; rep "LLaMA step (fused AdamW)" call2-a-kc-s/a llama_train
rep "EfficientNet-V2-S" call3-b-kc-t/b effnet_v2_s; rep "MobileNetV2" call3-b-kc-t/b mobilenet_v2
rep "ResNet-152" call3-b-kc-t/b resnet152; rep "Wide ResNet-50" call3-b-kc-t/b wide_resnet50; rep "GoogLeNet" call3-b-kc-t/b googlenet
rep "Swin-S" call4-c-kc-t/c swin_s; rep "GPT-2 decode graph" call4-c-kc-t/c gpt2_decode_graph
rep "Mistral decode graph" call4-c-kc-t/c mistral_decode_graph
rep "Qwen2 step (foreach AdamW)" call5-d-kc-t/d qwen2_train; rep "ConvNeXt-S" call5-d-kc-t/d convnext_small
rep "MaxViT-T" call5-d-kc-t/d maxvit_t; rep "Inception-v3" call5-d-kc-t/d inception_v3
python3 tools/prediction_chart.py --device H200 docs/prediction.svg "${args[@]}"
rm -rf "$w"
