#!/bin/bash
# The README's chart (docs/prediction.svg): the 21 models of session 16 on the H200, each
# answered by `kc run` with this build (the round with lead-ins) and compared with its own
# CUDA graph measured in the same call. * marks the eight kc never measured before;
# † EfficientNet-V2-S, whose round the lead-ins were built from. Reports regenerated with
# the committed kc from the results files. Run from the repository root after
# `cargo build --release`: bash docs/results/2026-11-27-session16/chart.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") w=$(mktemp -d)
for t in "$here"/call[1-5]-*.txz; do tar xJf "$t" -C "$w"; done
args=()
rep() { # LABEL PART NAME
  local dir=$w/$2/$3.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$3 --json > /dev/null
  args+=("$1=$w/r/$3/report.json")
}
rep "EfficientNet-V2-S†" a effnet_v2_s; rep "Wide ResNet-50" a wide_resnet50; rep "MobileNetV2*" a mobilenet_v2
rep "ResNet-50*" a resnet50; rep "ResNet-152" a resnet152; rep "Inception-v3*" b inception_v3
rep "GoogLeNet*" b googlenet; rep "ShuffleNetV2*" b shufflenet_v2; rep "MNASNet*" b mnasnet
rep "Swin-S" c swin_s; rep "T5 graph" c t5_graph; rep "ViT-B/32*" c vit_b_32
rep "ConvNeXt-S" c convnext_small; rep "VGG-16-BN*" c vgg16_bn
rep "LLaMA step (fused AdamW)" d llama_train; rep "Qwen2 step (foreach AdamW)" d qwen2_train
rep "Mistral decode graph" d mistral_decode_graph; rep "GPT-2 decode graph" d gpt2_decode_graph
rep "MaxViT-T" e maxvit_t; rep "Swin-V2-T" e swin_v2_t; rep "ResNeXt-50" e resnext50
python3 tools/prediction_chart.py --device H200 docs/prediction.svg "${args[@]}"
rm -rf "$w"
