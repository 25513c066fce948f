#!/bin/bash
# Session 15, diagnosis: where `kc run` of the T5 training step dies (SIGSEGV with no
# output in part n; graph mode over the memory image, `--no-dataflow` runs), now that kc
# names its activity on a fatal signal; and the MoE decode graph's device assertion, now
# named by unit. The captures come back (no plans: they do not fit) for the CPU stages.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/cudnn/lib:$T/nvidia/nccl/lib:$T/nvidia/cusparselt/lib:$T/nvidia/nvshmem/lib:${LD_LIBRARY_PATH:-}
KC=${KC:-kc-k}
xz -dkf .device/bin/$KC.xz; chmod +x .device/bin/$KC
kc=$PWD/.device/bin/$KC py=/opt/torch/.venv/bin/python here=$PWD out=$OUT/d w=/tmp/w; mkdir -p $out $w
name=t5_train; . tools/capture_inputs.sh --model t5 --batch 4 --seq 256 --dtype bf16 --mode train --optimizer adamw-fused
timeout 150 $kc run $out/t5_train.pt.trace.json.gz "${inputs[@]}" -o $w/t5 --json > $w/t5.json 2> $out/t5.run.log; echo "t5 run rc=$?" >> $out/diag.txt
name=mixtral_decode_graph; . tools/capture_inputs.sh --model mixtral --layers 2 --batch 16 --seq 256 --dtype bf16 --mode decode --cuda-graph
timeout 150 $kc run $out/mixtral_decode_graph.pt.trace.json.gz "${inputs[@]}" --reference $out/reference.json --reference-entry mixtral_decode_graph -o $w/mx --json > $w/mx.json 2> $out/mx.run.log; echo "mixtral run rc=$? " >> $out/diag.txt
cp $w/mx.json $out/mx.run.json 2>/dev/null; [ -d $w/mx/mixtral_decode_graph/report ] && cp $w/mx/mixtral_decode_graph/report/report.md $out/mx.report.md
cat $out/diag.txt; grep -v Assertion $out/t5.run.log | tail -5; grep -v Assertion $out/mx.run.log | tail -3
ls -la $out; rm -f $out/t5_train.values.bin; cd $OUT && tar cf d.tar d && rm -rf d; ls -la $OUT
