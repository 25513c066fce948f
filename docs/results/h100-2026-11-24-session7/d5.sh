#!/bin/bash
# Issue 24 D5: reads of values carried in from before the replay in regions of their own
# (plan format 9, `kc plan --carried-in own`, the default) against the same reads left in
# their storage (`--carried-in shared`) and the previous binary; the non-finite share after
# the timed replays and three 1 s energy windows, time and energy against the model.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
for b in kc-new kc-d5; do xz -dkf .device/bin/$b.xz; chmod +x .device/bin/$b; done
OLD=$PWD/.device/bin/kc-new
export KC=$PWD/.device/bin/kc-d5 PYTHON=/opt/torch/.venv/bin/python
P=${1:?part}; R=$OUT/$P; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $R/gpu.csv 2>&1
ex() { # BINARY PLAN TAG
  local s=$(date +%s)
  $1 exec $2 --runs 100 --energy-window 1 --energy-repeats 3 --verify -o $R/$3.graph.json > $R/$3.graph.log 2>&1
  echo "$3: rc=$? $(( $(date +%s) - s )) s $(grep -o 'non-finite values [0-9.]* %' $R/$3.graph.log)" >> $R/summary.txt
}
prep() { # BINARY TRACE TAG INGEST-ARGS...: ingest and lower into $R/TAG.lowered.kcir
  local b=$1 t=$2 tag=$3; shift 3
  $b ingest $t "$@" -o $R/$tag.kcir > /dev/null 2>$R/$tag.ingest.err
  $b lower --tiers $R/$tag.kcir -o $R/$tag.lowered.kcir > /dev/null 2>&1
  rm -f $R/$tag.kcir
}
both() { # TAG: own and shared plans of $R/TAG.lowered.kcir, each replayed
  $KC plan $R/$1.lowered.kcir -o $R/$1.own.kcplan > /dev/null 2>&1
  $KC plan $R/$1.lowered.kcir --carried-in shared -o $R/$1.shared.kcplan > /dev/null 2>&1
  $KC plan show $R/$1.own.kcplan > $R/$1.own.planshow.txt 2>&1
  ex $KC $R/$1.own.kcplan $1.own
  ex $KC $R/$1.shared.kcplan $1.shared
}
case $P in
g)  # The GPT-2 4-layer fused-AdamW step of session 6 (v8: 2.36 % non-finite after the windows).
  I=.device/in/v; n=gpt2_4l_train_b4s256
  prep $OLD $I/$n.pt.trace.json.gz old --shapes $I/$n.et.json.gz
  $OLD plan $R/old.lowered.kcir -o $R/old.kcplan > /dev/null 2>&1
  ex $OLD $R/old.kcplan $n.previous
  prep $KC $I/$n.pt.trace.json.gz $n --shapes $I/$n.et.json.gz
  both $n
  ;;
esac
cap() { # NAME CAPTURE-ARGS: capture, replay (own) with report, then own/shared graph passes
  local n=$1; shift; local s=$(date +%s)
  out=$R name=$n py=$PYTHON here=$PWD
  . tools/capture_inputs.sh "$@"
  echo "captured $n: $(( $(date +%s) - s )) s" >> $R/summary.txt
  prep $KC $R/$n.pt.trace.json.gz $n "${inputs[@]}"
  both $n
  $KC exec $R/$n.own.kcplan --isolated --cache context --no-energy -o $R/$n.isolated.json > $R/$n.isolated.log 2>&1
  $KC report $R/$n.own.graph.json --isolated $R/$n.isolated.json --plan $R/$n.own.kcplan --reference $R/reference.json --reference-entry $n -o $R/$n.report > /dev/null 2>&1
  rm -f $R/$n.lowered.kcir $R/*.kcplan
}
case $P in
r)  # The GPT-2 step's own plan replayed three times (does the non-finite share repeat?), and
    # the Qwen2 foreach step captured only: its trace and ET come back for a look at the lists.
  I=.device/in/v; n=gpt2_4l_train_b4s256
  prep $KC $I/$n.pt.trace.json.gz $n --shapes $I/$n.et.json.gz
  $KC plan $R/$n.lowered.kcir -o $R/$n.own.kcplan > /dev/null 2>&1
  for k in 1 2 3; do ex $KC $R/$n.own.kcplan $n.own$k; done
  out=$R name=qwen2_2l_train_foreachadamw_b4s256 py=$PYTHON here=$PWD
  . tools/capture_inputs.sh --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
  rm -f $R/*.kcplan $R/*.lowered.kcir; cd $OUT && tar cf r.tar r; exit 0
  ;;
v)  # ViT-B/16 fp32 captured only: its trace and ET come back for a look at the dataflow.
  out=$R name=vit_b16_fp32_tf32_b16 py=$PYTHON here=$PWD
  . tools/capture_inputs.sh --model vit_b_16 --dtype fp32 --tf32 --batch 16
  cd $OUT && tar cf v.tar v; exit 0
  ;;
c1)
  cap vit_b16_fp32_tf32_b16 --model vit_b_16 --dtype fp32 --tf32 --batch 16
  cap qwen2_2l_train_foreachadamw_b4s256 --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
  ;;
c2)
  cap mixtral2l_train_b2s256 --model mixtral --layers 2 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2048 --vocab 32000 --batch 2 --seq 256 --mode train --dtype bf16 --optimizer adamw-fused
  cap resnet18_train_sgdm_b32_cl --model resnet18 --mode train --optimizer sgd-momentum --batch 32 --dtype bf16 --channels-last
  ;;
esac
rm -f $R/*.kcplan $R/*.lowered.kcir
cd $OUT && tar cJf $P.txz --exclude="$P/*.pt.trace.json.gz" --exclude="$P/*.et.json.gz" --exclude="$P/*.values.bin" --exclude="$P/*kernels*.json" $P
