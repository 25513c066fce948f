#!/bin/bash
# The README's chart (docs/prediction.svg): 28 models on the H200, each answered by `kc run`
# and compared with its own CUDA graph measured in the same call, each model's latest answer.
# Session 19's seven, marked "s19": T5's graph (call 3, without its values), the MoE decode
# graphs and GPT-2's (call 2, every recorded value), the LLaMA step (call 1), the Qwen2 step
# and VGG-16-BN (call 4). Session 18's ten others, unmarked, and session 17's eleven others,
# marked "s17" (their units measured as they ran). Reports regenerated with the committed kc
# from the results files. Run from the repository root after `cargo build --release`:
#   bash docs/results/2026-11-27-session19/chart.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0")/../2026-11-27-session18 s17=$(dirname "$0")/../2026-11-27-session17 s19=$(dirname "$0") w=$(mktemp -d)
for c in call1-a-kc-a call2-b-kc-b call3-c-kc-b call4-d-kc-c; do mkdir -p $w/$c; tar xJf "$s19/$c.txz" -C $w/$c; done
for c in call1-a-kc-u call2-b-kc-u call3-c-kc-u call6-f-kc-w; do mkdir -p $w/$c; tar xJf "$here/$c.txz" -C $w/$c; done
for c in call2-a-kc-s call3-b-kc-t call4-c-kc-t call5-d-kc-t; do mkdir -p $w/$c; tar xJf "$s17/$c.txz" -C $w/$c; done
args=()
rep() { # LABEL CALL/PART NAME
  local dir=$w/$2/$3.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$2/$3 --json > /dev/null
  args+=("$1=$w/r/$2/$3/report.json")
}
rep "T5 graph (s19)" call3-c-kc-b/c t5_graph; rep "Qwen3-MoE decode graph (s19)" call2-b-kc-b/b qwen3_moe_decode_graph
rep "Mixtral decode graph (s19)" call2-b-kc-b/b mixtral_decode_graph; rep "GPT-2 decode graph (s19)" call2-b-kc-b/b gpt2_decode_graph
rep "LLaMA step (s19)" call1-a-kc-a/a llama_train; rep "Qwen2 step (s19)" call4-d-kc-c/d qwen2_train
rep "VGG-16-BN (s19)" call4-d-kc-c/d vgg16_bn
rep "ResNet-34" call6-f-kc-w/f resnet34; rep "ConvNeXt-S" call1-a-kc-u/a convnext_small
rep "MobileNetV3-L" call1-a-kc-u/a mobilenet_v3_large; rep "Swin-B" call1-a-kc-u/a swin_b
rep "GPT-2 step (SGD momentum)" call2-b-kc-u/b gpt2_train_sgd; rep "EfficientNet-B3" call2-b-kc-u/b efficientnet_b3
rep "MNASNet" call2-b-kc-u/b mnasnet; rep "ShuffleNetV2" call2-b-kc-u/b shufflenet_v2
rep "Swin-V2-B" call3-c-kc-u/c swin_v2_b; rep "DenseNet-201" call3-c-kc-u/c densenet201
rep "ViT-B/32 (s17)" call2-a-kc-s/a vit_b_32
rep "ResNet-50 (s17)" call2-a-kc-s/a resnet50
rep "EfficientNet-V2-S (s17)" call3-b-kc-t/b effnet_v2_s; rep "MobileNetV2 (s17)" call3-b-kc-t/b mobilenet_v2
rep "ResNet-152 (s17)" call3-b-kc-t/b resnet152; rep "Wide ResNet-50 (s17)" call3-b-kc-t/b wide_resnet50
rep "GoogLeNet (s17)" call3-b-kc-t/b googlenet; rep "Swin-S (s17)" call4-c-kc-t/c swin_s
rep "Mistral decode graph (s17)" call4-c-kc-t/c mistral_decode_graph
rep "MaxViT-T (s17)" call5-d-kc-t/d maxvit_t
rep "Inception-v3 (s17)" call5-d-kc-t/d inception_v3
python3 tools/prediction_chart.py --device H200 docs/prediction.svg "${args[@]}"
rm -rf "$w"
