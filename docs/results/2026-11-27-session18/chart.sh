#!/bin/bash
# The README's chart (docs/prediction.svg): 28 models on the H200, each answered by `kc run`
# and compared with its own CUDA graph measured in the same call. The 13 of session 18
# (calls 1-3 and 6; Mixtral from call 4; T5, ResNet-34 and Qwen3-MoE from call 6, with every
# fix of the session), then the 15 of session 17 that session 18 did not run again, marked
# "s17" (their units measured as they ran). Reports regenerated with the committed kc from
# the results files. Run from the repository root after `cargo build --release`:
#   bash docs/results/2026-11-27-session18/chart.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") s17=$(dirname "$0")/../2026-11-27-session17 w=$(mktemp -d)
for c in call1-a-kc-u call2-b-kc-u call3-c-kc-u call4-d-kc-v call6-f-kc-w; do mkdir -p $w/$c; tar xJf "$here/$c.txz" -C $w/$c; done
for c in call2-a-kc-s call3-b-kc-t call4-c-kc-t call5-d-kc-t; do mkdir -p $w/$c; tar xJf "$s17/$c.txz" -C $w/$c; done
args=()
rep() { # LABEL CALL/PART NAME
  local dir=$w/$2/$3.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$2/$3 --json > /dev/null
  args+=("$1=$w/r/$2/$3/report.json")
}
rep "T5 graph" call6-f-kc-w/f t5_graph; rep "Qwen3-MoE decode graph" call6-f-kc-w/f qwen3_moe_decode_graph
rep "ResNet-34" call6-f-kc-w/f resnet34; rep "ConvNeXt-S" call1-a-kc-u/a convnext_small
rep "MobileNetV3-L" call1-a-kc-u/a mobilenet_v3_large; rep "Swin-B" call1-a-kc-u/a swin_b
rep "GPT-2 step (SGD momentum)" call2-b-kc-u/b gpt2_train_sgd; rep "EfficientNet-B3" call2-b-kc-u/b efficientnet_b3
rep "MNASNet" call2-b-kc-u/b mnasnet; rep "ShuffleNetV2" call2-b-kc-u/b shufflenet_v2
rep "Swin-V2-B" call3-c-kc-u/c swin_v2_b; rep "DenseNet-201" call3-c-kc-u/c densenet201
rep "Mixtral decode graph" call4-d-kc-v/d mixtral_decode_graph
rep "VGG-16-BN (s17)" call2-a-kc-s/a vgg16_bn; rep "ViT-B/32 (s17)" call2-a-kc-s/a vit_b_32
rep "ResNet-50 (s17)" call2-a-kc-s/a resnet50; rep "LLaMA step (s17)" call2-a-kc-s/a llama_train
rep "EfficientNet-V2-S (s17)" call3-b-kc-t/b effnet_v2_s; rep "MobileNetV2 (s17)" call3-b-kc-t/b mobilenet_v2
rep "ResNet-152 (s17)" call3-b-kc-t/b resnet152; rep "Wide ResNet-50 (s17)" call3-b-kc-t/b wide_resnet50
rep "GoogLeNet (s17)" call3-b-kc-t/b googlenet; rep "Swin-S (s17)" call4-c-kc-t/c swin_s
rep "GPT-2 decode graph (s17)" call4-c-kc-t/c gpt2_decode_graph; rep "Mistral decode graph (s17)" call4-c-kc-t/c mistral_decode_graph
rep "Qwen2 step (s17)" call5-d-kc-t/d qwen2_train; rep "MaxViT-T (s17)" call5-d-kc-t/d maxvit_t
rep "Inception-v3 (s17)" call5-d-kc-t/d inception_v3
python3 tools/prediction_chart.py --device H200 docs/prediction.svg "${args[@]}"
rm -rf "$w"
