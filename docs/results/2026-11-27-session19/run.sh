#!/bin/bash
# Session 19. PART names a set of models; each is captured, answered by `kc run --reference`
# (the pairs and the round now read integer and boolean results as the units alone did:
# the model's values), the model measured again (`--remeasure`), and reported. nvidia-smi samples clocks and power every
# 200 ms throughout (smi.csv). Run from the repository root, binary in .device/bin (KC=).
# BUDGET (s) skips models that would start after it.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-a}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD
P=${1:?part}; out=$OUT/$P; mkdir -p $out
nvidia-smi --query-gpu=name,serial,driver_version,power.limit --format=csv > $out/gpu.csv 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 200 > $out/smi.csv 2>&1 & SMI=$!
T0=$(date +%s)
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" >> $out/timeline.txt; }
kcrun() { # NAME
  local n=$1 s=$(date +%s%N)
  mark "kc run $n"
  timeout 200 $kc run $out/$n.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json \
    --reference-entry $n -o $out/$n.kc --json > $out/$n.run.json 2> $out/$n.run.log
  echo "$n rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms" >> $out/summary.txt
  local d=$out/$n.kc/$n
  mark "remeasure $n"
  $py traces/capture.py "${args[@]}" --name $n --out $out --remeasure >> $out/$n.remeasure.log 2>&1
  $kc report $d/plan.graph.json --isolated $d/plan.isolated.context.json --plan $d/plan.kcplan --reference $out/reference.json \
    --reference-entry $n -o $d/report > $out/$n.report.log 2>&1
  [ -z "${KEEP:-}" ] && rm -f $d/plan.kcplan $d/*.kcir
  rm -f $d/report/replay.trace.json
}
model() { # NAME CAPTURE-ARGS
  local n=$1; shift
  if [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-300} ]; then mark "skip $n (time)"; return; fi
  args=("$@"); name=$n
  mark "capture $n"
  . tools/capture_inputs.sh "$@"
  kcrun $n
}
cnn() { model $1 --model $2 --batch ${3:-32} --dtype bf16 --channels-last --no-values; }
case $P in
a) # the MoE decode graphs: the round's routing from the model's values; the values run's ET kept
   export KC_KEEP_VALUES_ET=1
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   unset KC_KEEP_VALUES_ET
   model llama_train --model llama --layers 2 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816 --vocab 32000 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph ;;
b) # capture.py's values matched to the graph captures (kc-b): the MoE decode graphs, T5, GPT-2's
   model qwen3_moe_decode_graph --model qwen3_moe --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model mixtral_decode_graph --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model gpt2_decode_graph --model gpt2 --layers 4 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach ;;
c) # T5's graph crashed (SIGSEGV in cuGraphLaunch) with 259 recorded values where 71 had matched: its
   # capture, ETs and values kept (KEEP_VALUES=1), kc run without the values, the tools on the machine
   export KC_KEEP_VALUES_ET=1
   (which compute-sanitizer; ls /usr/local/cuda*/bin 2>&1 | head -20; nvidia-smi -L) > $out/tools.txt 2>&1
   args=(--model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph); name=t5_graph
   . tools/capture_inputs.sh "${args[@]}"
   novalues=(); skip=0; for x in "${inputs[@]}"; do if [ $skip = 1 ]; then skip=0; continue; fi; [ "$x" = --values ] && { skip=1; continue; }; novalues+=("$x"); done
   inputs=("${novalues[@]}"); kcrun t5_graph ;;
d) # kc-c (an in-place op's written tensor bound to its producer's fresh result, not its recorded
   # values): T5's graph with its values, T5's training step (SIGSEGV since session 14), then more
   model t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph
   model t5_train --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
   model qwen2_train --model qwen2 --layers 2 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-foreach
   cnn vgg16_bn vgg16_bn ;;
esac
kill $SMI 2>/dev/null
for f in $out/*/*/report/report.md; do [ -f $f ] && { echo "== $f"; grep -E "prediction from parts|Σ isolated|kc graph replay \||model, |in the round|SM clock" $f | head -10; }; done >> $out/summary.txt
cat $out/summary.txt $out/timeline.txt
if [ -n "${KEEP_VALUES:-}" ]; then cd $OUT && tar cJf $P.txz $P && rm -rf $P
elif [ -n "${KEEP:-}" ]; then cd $OUT && tar cJf $P.txz --exclude="*.values.bin" $P && rm -rf $P
else cd $OUT && tar cJf $P.txz --exclude="*.pt.trace.json.gz" --exclude="*.et.json.gz" --exclude="*.values.bin" --exclude="*.inductor_cache.tar.gz" $P && rm -rf $P; fi
