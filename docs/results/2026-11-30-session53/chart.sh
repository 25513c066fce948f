#!/bin/bash
# The README's chart (docs/prediction.svg): 83 models on the H200, each answered by `kc run`
# and compared with its own CUDA graph measured in the same call, each model's latest answer
# from a build without a defect found since. Session 53's, marked "s53", each in place of
# its earlier answer, answered by kc-zz12 (every unit also recorded in the model's cache
# state with its code evicted where the model's is far; the prediction does not take that
# record): Qwen2's decode graph and ViT-B/16 in fp32 with TF32 (call 2, run.sh part b),
# GPT-2's and Qwen3-MoE's decode graphs and ConvNeXt-T's training step (call 4, part c).
# Session 52's, marked "s52": a family new to the
# chart, Qwen3-MoE's prefill as a CUDA graph (call 5, run.sh part z, kc-zz10; MViT-V2-S,
# answered in the same call, left off again: its CUDA graph could not be captured, and its
# eager run is host-bound). Session 51's, marked "s51", each in place of its
# earlier answer: Swin V2-S in fp32 with TF32 and Qwen2's training step, captured anew (call
# 7, run.sh part j, kc-zz5: each unit recorded in the model's cache state too); and a
# family new to the chart, SqueezeNet 1.1 (call 8, part u, kc-zz6).
# Session 50's, marked "s50", each in place of its
# earlier answer: Mixtral's and Mistral's decode graphs and RegNetY-1.6GF's training step
# (call 1, run.sh part e, kc-zx: histc in its functional form, the round by step);
# ResNeXt-101 32x8d and EfficientNet-V2-M (call 2, part f, kc-zx); BLOOM's step graph and
# LLaMA's training step (call 3, part g, kc-zx); Qwen3-MoE's step graph and BERT's
# inference graph (call 4, part h, kc-zy: each launch's first cycle of the round told apart,
# and capture.py's replay check by root mean square).
# Session 49's, marked "s49": the seven decode
# graphs, captured anew since capture.py's decode step no longer lets its CUDA graph read a
# KV cache its capture freed (fff7409; every graph checked against its eager step):
# LLaMA's (call 1, run.sh part a, kc-zv), Mistral's, Qwen2's, GPT-2's and BLOOM's (call 3,
# part c), and Mixtral's and Qwen3-MoE's answered again by kc-zw (call 4, part d: every
# unit's kernels alone recorded by step, so the round's kernels at a unit's counted step
# are set against that step alone), with T5's graph (call 4), each in place of its earlier
# answer; and a model new to the chart, RegNetY-1.6GF's training step (call 2, part b).
# Session 48's, marked "s48": EfficientNet-B0's and
# MobileNetV3-L's training steps (call 2, run.sh part c, kc-zs: autograd's clones of their
# in-place activations' inputs replayed on their own since a79957b), LLaMA's and Qwen2's
# training steps (call 1, part a, kc-zr), LLaMA's and Mixtral's decode graphs (call 3, part
# b, kc-zt), each in place of its earlier answer, and a model new to the chart,
# EfficientNet-V2-S's training step (call 3, part b, kc-zt).
# Session 47's, marked "s47": the five training
# steps whose convolution_backward unit had launched its nested bias-gradient sum a second
# time (fixed in c802d92; kc-zr): ConvNeXt-T's and MobileNetV3-L's (call 2, run.sh part b),
# ViT-B/16's and Swin-T's (call 3, part c) and ConvNeXt-S's (call 4, part d); and BLOOM's
# training step graph (call 1, part a, kc-zq: its GELU backward's Python-number `self` a CPU
# scalar since 8a93a51), each in place of its earlier answer; and a model new to the chart,
# EfficientNet-B0's training step (call 5, part e, kc-zr).
# The rest as session 45's chart.sh says: session 45's ("s45"), session 44's ("s44"),
# session 43's ("s43"), session 42's ("s42"; MViT-V2-S left off, its CUDA graph could not be
# captured), session 41's ("s41"), session 40's ("s40"; kc-zb, kc-zc, kc-zd), session 39's
# ("s39"), session 38's ("s38"), session 37's ("s37"), session 36's ("s36"), session 35's
# ("s35"), session 34's ("s34"), session 32's ("s32"), session 31's ("s31"), session 24's
# Swin V2-T ("s24"), session 19's ("s19"), session 18's (unmarked) and session 17's ("s17"). Reports
# regenerated with the committed kc from the results files. Run from the repository root
# after `cargo build --release`:
#   bash docs/results/2026-11-30-session53/chart.sh
# With W=DIR the results and their reports are kept there (DIR/r/CALL/PART/NAME/report.json).
set -eu
KC=${KC:-target/release/kc}
s53=$(dirname "$0") s52=$(dirname "$0")/../2026-11-30-session52 s51=$(dirname "$0")/../2026-11-29-session51 s50=$(dirname "$0")/../2026-11-29-session50 s49=$(dirname "$0")/../2026-11-29-session49 s48=$(dirname "$0")/../2026-11-29-session48 s47=$(dirname "$0")/../2026-11-29-session47 s45=$(dirname "$0")/../2026-11-29-session45 s44=$(dirname "$0")/../2026-11-29-session44 s43=$(dirname "$0")/../2026-11-29-session43 s42=$(dirname "$0")/../2026-11-29-session42 s41=$(dirname "$0")/../2026-11-29-session41 s40=$(dirname "$0")/../2026-11-29-session40 s39=$(dirname "$0")/../2026-11-29-session39 s38=$(dirname "$0")/../2026-11-29-session38 s37=$(dirname "$0")/../2026-11-28-session37 s36=$(dirname "$0")/../2026-11-28-session36 s35=$(dirname "$0")/../2026-11-28-session35 s34=$(dirname "$0")/../2026-11-28-session34 s33=$(dirname "$0")/../2026-11-28-session33 s32=$(dirname "$0")/../2026-11-28-session32 s31=$(dirname "$0")/../2026-11-28-session31 s24=$(dirname "$0")/../2026-11-27-session24 s22=$(dirname "$0")/../2026-11-27-session22 s21=$(dirname "$0")/../2026-11-27-session21 s20=$(dirname "$0")/../2026-11-27-session20 s19=$(dirname "$0")/../2026-11-27-session19 s18=$(dirname "$0")/../2026-11-27-session18
s17=$(dirname "$0")/../2026-11-27-session17 w=${W:-$(mktemp -d)}
for c in call2-b-kc-zz12 call4-c-kc-zz12; do mkdir -p $w/$c; tar xJf "$s53/$c.txz" -C $w/$c; done
for c in call5-z-kc-zz10; do mkdir -p $w/$c; tar xJf "$s52/$c.txz" -C $w/$c; done
for c in call7-j-kc-zz5 call8-u-kc-zz6; do mkdir -p $w/$c; tar xJf "$s51/$c.txz" -C $w/$c; done
for c in call1-e-kc-zx call2-f-kc-zx call3-g-kc-zx call4-h-kc-zy; do mkdir -p $w/$c; tar xJf "$s50/$c.txz" -C $w/$c; done
for c in call1-a-kc-zv call2-b-kc-zv call3-c-kc-zv call4-d-kc-zw; do mkdir -p $w/$c; tar xJf "$s49/$c.txz" -C $w/$c; done
for c in call1-a-kc-zr call2-c-kc-zs call3-b-kc-zt; do mkdir -p $w/$c; tar xJf "$s48/$c.txz" -C $w/$c; done
for c in call1-a-kc-zq call2-b-kc-zr call3-c-kc-zr call4-d-kc-zr call5-e-kc-zr; do mkdir -p $w/$c; tar xJf "$s47/$c.txz" -C $w/$c; done
for c in call1-a-kc-zm call2-b-kc-zn call3-c-kc-zo; do mkdir -p $w/$c; tar xJf "$s45/$c.txz" -C $w/$c; done
for c in call1-a-kc-zj call3-b-kc-zk call4-c-kc-zl; do mkdir -p $w/$c; tar xJf "$s44/$c.txz" -C $w/$c; done
for c in call2-b-kc-zi call3-c-kc-zi call4-d-kc-zi; do mkdir -p $w/$c; tar xJf "$s43/$c.txz" -C $w/$c; done
for c in call1-a-kc-zg call2-b-kc-zg call3-c-kc-zg call4-d-kc-zg; do mkdir -p $w/$c; tar xJf "$s42/$c.txz" -C $w/$c; done
for c in call2-b-kc-ze call3-c-kc-ze call4-d-kc-ze call7-e-kc-zf; do mkdir -p $w/$c; tar xJf "$s41/$c.txz" -C $w/$c; done
for c in call1-m-kc-zb call2-n-kc-zb call3-o-kc-zb call4-p-kc-zc call5-q-kc-zd; do mkdir -p $w/$c; tar xJf "$s40/$c.txz" -C $w/$c; done
for c in call3-i-kc-za call4-j-kc-za call5-k-kc-za; do mkdir -p $w/$c; tar xJf "$s39/$c.txz" -C $w/$c; done
for c in call1-a-kc-x call2-c-kc-x call3-d-kc-x; do mkdir -p $w/$c; tar xJf "$s38/$c.txz" -C $w/$c; done
for c in call2-b-kc-w; do mkdir -p $w/$c; tar xJf "$s37/$c.txz" -C $w/$c; done
for c in call1-k-kc-u call3-m-kc-u call4-n-kc-u; do mkdir -p $w/$c; tar xJf "$s36/$c.txz" -C $w/$c; done
for c in call1-f-kc-s call2-g-kc-s call3-h-kc-s; do mkdir -p $w/$c; tar xJf "$s35/$c.txz" -C $w/$c; done
for c in call2-f-kc-m call3-g-kc-m; do mkdir -p $w/$c; tar xJf "$s32/$c.txz" -C $w/$c; done
for c in call1-a-kc-k call2-b-kc-k; do mkdir -p $w/$c; tar xJf "$s31/$c.txz" -C $w/$c; done
mkdir -p $w/call3-c-kc-p; tar xJf "$s24/call3-c-kc-p.txz" -C $w/call3-c-kc-p
for c in call4-d-kc-c; do mkdir -p $w/$c; tar xJf "$s19/$c.txz" -C $w/$c; done
for c in call1-a-kc-u call2-b-kc-u call3-c-kc-u call6-f-kc-w; do mkdir -p $w/$c; tar xJf "$s18/$c.txz" -C $w/$c; done
for c in call2-a-kc-s call3-b-kc-t call4-c-kc-t call5-d-kc-t; do mkdir -p $w/$c; tar xJf "$s17/$c.txz" -C $w/$c; done
args=()
rep() { # LABEL CALL/PART NAME
  local dir=$w/$2/$3.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$2/$3 --json > /dev/null
  args+=("$1=$w/r/$2/$3/report.json")
}
again() { # LABEL CALL/PART NAME: the second run on the same capture (`run.sh`'s `again`)
  local dir=$w/$2/$3.again.kc/$3
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$2/reference.json \
    --reference-entry $3 -o $w/r/$2/$3.again --json > /dev/null
  args+=("$1=$w/r/$2/$3.again/report.json")
}
rep "Qwen3-MoE prefill graph (s52)" call5-z-kc-zz10/z qwen3_moe_prefill_graph
rep "T5 graph (s49)" call4-d-kc-zw/d t5_graph
rep "RegNetY-1.6GF (s41)" call2-b-kc-ze/b regnety16; rep "RegNetX-3.2GF (s42)" call1-a-kc-zg/a regnetx
rep "R3D-18 (s42)" call1-a-kc-zg/a r3d18; rep "LR-ASPP MobileNetV3-L (s42)" call1-a-kc-zg/a lraspp
rep "Swin3D-T (s43)" call2-b-kc-zi/b swin3d_t; rep "S3D (s42)" call3-c-kc-zg/c s3d; rep "R(2+1)D-18 (s42)" call3-c-kc-zg/c r2plus1d
rep "R3D-18 TF32 (s42)" call4-d-kc-zg/d r3d18_tf32; rep "S3D TF32 (s42)" call4-d-kc-zg/d s3d_tf32
rep "RegNetY-3.2GF TF32 (s41)" call2-b-kc-ze/b regnety_tf32; rep "ResNeXt-101 32x8d (s50)" call2-f-kc-zx/f resnext101
rep "BLOOM decode graph (s49)" call3-c-kc-zv/c bloom_decode_graph
rep "Mixtral step (s44)" call3-b-kc-zk/b mixtral_train; rep "Mixtral step graph (s44)" call3-b-kc-zk/b mixtral_train_graph
rep "DeepLabV3-ResNet50 (s41)" call3-c-kc-ze/c deeplabv3; rep "FCN-ResNet50 (s41)" call4-d-kc-ze/d fcn
rep "LLaMA decode graph (s49)" call1-a-kc-zv/a llama_decode_graph; rep "GPT-2 step graph (s41)" call7-e-kc-zf/e gpt2_train_graph
rep "EfficientNet-V2-S (s39)" call3-i-kc-za/i effnet_v2_s; rep "ResNet-50 (s43)" call3-c-kc-zi/c resnet50
rep "Swin V2-S TF32 (s51)" call7-j-kc-zz5/j swin_v2_s_tf32; rep "SqueezeNet 1.1 (s51)" call8-u-kc-zz6/u squeezenet
rep "EfficientNet-V2-M (s50)" call2-f-kc-zx/f effnet_v2_m; rep "ConvNeXt-B TF32 (s39)" call4-j-kc-za/j convnext_base_tf32
rep "MobileNetV3-L step (s48)" call2-c-kc-zs/c mobilenet_v3_train
rep "EfficientNet-B4 (s39)" call5-k-kc-za/k effnet_b4
rep "ResNeXt-50 (s40)" call1-m-kc-zb/m resnext50
rep "ResNeXt-101 64x4d (s40)" call2-n-kc-zb/n resnext101_64
rep "RegNetX-8GF (s40)" call2-n-kc-zb/n regnetx8
rep "EfficientNet-B2 (s40)" call3-o-kc-zb/o effnet_b2; rep "ResNet-50 TF32 (s40)" call3-o-kc-zb/o resnet50_tf32
rep "Swin-T TF32 (s43)" call2-b-kc-zi/b swin_t_tf32; rep "ViT-B/32 step (s40)" call3-o-kc-zb/o vit_b_32_train
rep "Swin-T step (s47)" call3-c-kc-zr/c swin_t_train
rep "ViT-B/16 step (s47)" call3-c-kc-zr/c vit_b_16_train; rep "ResNet-101 step (s38)" call3-d-kc-x/d resnet101_train
rep "ConvNeXt-T step (s53)" call4-c-kc-zz12/c convnext_tiny_train
rep "ConvNeXt-S step (s47)" call4-d-kc-zr/d convnext_small_train
rep "EfficientNet-B0 step (s48)" call2-c-kc-zs/c effnet_b0_train
rep "EfficientNet-V2-S step (s48)" call3-b-kc-zt/b effnet_v2_s_train
rep "RegNetY-1.6GF step (s50)" call1-e-kc-zx/e regnety16_train
rep "Wide ResNet-50-2 step (s36)" call1-k-kc-u/k wide_resnet50_train; rep "BERT graph (s50)" call4-h-kc-zy/h bert_infer_graph
rep "ViT-B/16 TF32 (s53)" call2-b-kc-zz12/b vit_b_16_tf32; rep "Mixtral decode graph (s50)" call1-e-kc-zx/e mixtral_decode_graph
rep "Qwen2 step (s51)" call7-j-kc-zz5/j qwen2_train
rep "T5 step (s44)" call3-b-kc-zk/b t5_train; rep "Swin-B (s44)" call4-c-kc-zl/c swin_b
rep "ResNeXt-50 step (s35)" call3-h-kc-s/h resnext50_train
rep "LLaMA step (s50)" call3-g-kc-zx/g llama_train; rep "Qwen2 step graph (s35)" call3-h-kc-s/h qwen2_train_graph
rep "LLaMA step graph (s44)" call4-c-kc-zl/c llama_train_graph
rep "Qwen3-MoE step graph (s50)" call4-h-kc-zy/h qwen3_moe_train_graph
rep "BLOOM step graph (s50)" call3-g-kc-zx/g bloom_train_graph; rep "Mistral step graph (s45)" call3-c-kc-zo/c mistral_train_graph
rep "ConvNeXt-T compiled (s31)" call1-a-kc-k/a convnext_tiny_compiled
rep "ViT-L/16 (s31)" call2-b-kc-k/b vit_l_16
rep "Swin V2-T (s24)" call3-c-kc-p/c swin_v2_t
rep "BERT step graph (s45)" call1-a-kc-zm/a bert_train_graph
rep "Qwen2 decode graph (s53)" call2-b-kc-zz12/b qwen2_decode_graph
rep "Qwen3-MoE decode graph (s53)" call4-c-kc-zz12/c qwen3_moe_decode_graph
rep "GPT-2 decode graph (s53)" call4-c-kc-zz12/c gpt2_decode_graph
rep "VGG-16-BN (s19)" call4-d-kc-c/d vgg16_bn
rep "ResNet-34" call6-f-kc-w/f resnet34; rep "ConvNeXt-S" call1-a-kc-u/a convnext_small
rep "MobileNetV3-L" call1-a-kc-u/a mobilenet_v3_large
rep "GPT-2 step (SGD momentum)" call2-b-kc-u/b gpt2_train_sgd; rep "EfficientNet-B3" call2-b-kc-u/b efficientnet_b3
rep "MNASNet" call2-b-kc-u/b mnasnet; rep "ShuffleNetV2" call2-b-kc-u/b shufflenet_v2
rep "Swin-V2-B" call3-c-kc-u/c swin_v2_b; rep "DenseNet-201" call3-c-kc-u/c densenet201
rep "ViT-B/32 (s17)" call2-a-kc-s/a vit_b_32
rep "MobileNetV2 (s17)" call3-b-kc-t/b mobilenet_v2
rep "ResNet-152 (s17)" call3-b-kc-t/b resnet152; rep "Wide ResNet-50 (s17)" call3-b-kc-t/b wide_resnet50
rep "GoogLeNet (s17)" call3-b-kc-t/b googlenet; rep "Swin-S (s17)" call4-c-kc-t/c swin_s
rep "Mistral decode graph (s50)" call1-e-kc-zx/e mistral_decode_graph
rep "MaxViT-T (s17)" call5-d-kc-t/d maxvit_t
rep "Inception-v3 (s17)" call5-d-kc-t/d inception_v3
python3 tools/prediction_chart.py --device H200 docs/prediction.svg "${args[@]}"
# The counts the README quotes.
python3 "$s21/counts.py" "${args[@]}"
# The answers' errors, for `kc report --method-spread` (session 49).
python3 tools/prediction_residuals.py "$s53/answers.json" \
  "session 53's H200 chart, 83 answers (docs/results/2026-11-30-session53/chart.sh)" "${args[@]}"
echo "${#args[@]} answers"
[ -n "${W:-}" ] || rm -rf "$w"
