#!/bin/bash
# The README's chart (docs/prediction.svg): nineteen models on the H200, each answered by
# `kc run` and compared with its own CUDA graph measured in the same call: session 14's ten
# and session 15's nine never seen before (ViT-B/16 fp32 TF32, EfficientNet-V2-S, Swin-S,
# Wide ResNet-50, the Mixtral MoE decode graph; ConvNeXt-S, ResNet-152, ViT-L/16,
# RegNetX-3.2GF). Reports regenerated with the committed
# kc from the results files, except Mixtral's, which call 8 returned as its report only
# (`kc run --json`, built from this session's pricing). Run from the repository root after
# `cargo build --release`: bash docs/results/2026-11-27-session15/chart.sh
set -eu
KC=${KC:-target/release/kc}
here=$(dirname "$0") s14=$here/../h200-2026-11-26-session14 w=$(mktemp -d)
for t in "$s14"/call*.txz "$here"/call[345]-*.txz "$here"/call13-*.txz; do tar xJf "$t" -C "$w"; done
tar xJf "$here"/calls8-10-diag.txz -C "$w"
args=()
rep() { # LABEL PART NAME
  local dir=$w/$2/$3.kc/$3; local iso=$(ls $dir/plan.isolated.*.json | head -1)
  $KC report $dir/plan.graph.json --isolated $iso --reference $w/$2/reference.json --reference-entry $3 -o $w/r/$3 --json > /dev/null
  args+=("$1=$w/r/$3/report.json")
}
rep "T5 graph" a t5_graph; rep "LLaMA step (fused AdamW)" e llama_train; rep "Qwen2 step (foreach AdamW)" e qwen2_train
rep "Mistral decode graph*" e mistral_decode_graph; rep "Swin-V2-T*" g swin_v2_t; rep "RegNetY-1.6GF*" g regnet_y
rep "DenseNet-121 TF32*" g densenet121_tf32; rep "MaxViT-T*" h maxvit_t; rep "GPT-2 decode graph*" h gpt2_decode_graph
rep "ResNeXt-50*" h resnext50; rep "ViT-B/16 fp32 TF32*" h200a vit_b16_tf32; rep "EfficientNet-V2-S*" h200b effnet_v2_s
rep "Swin-S*" n swin_s; rep "Wide ResNet-50*" n wide_resnet50
rep "ConvNeXt-S*" m convnext_small; rep "ResNet-152*" m resnet152; rep "ViT-L/16*" m vit_l_16
rep "RegNetX-3.2GF*" m regnet_x_3_2gf
python3 -c "import json,sys; json.dump(json.load(open(sys.argv[1]))['report'], open(sys.argv[2], 'w'))" $w/call8/mx.run.json $w/mx.report.json
args+=("Mixtral MoE decode graph*=$w/mx.report.json")
python3 tools/prediction_chart.py --device H200 docs/prediction.svg "${args[@]}"
rm -rf "$w"
