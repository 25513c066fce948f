#!/bin/bash
# Session 55's GPU calls. PART names a measurement; tools/device_session.sh sets up the
# call and defines `ways` and `model`. Run from the repository root with the binary in
# .device/bin (KC=) and the plans in .device/plans; BUDGET (s) skips what would start
# after it. Results go to $OUT/PART.txz.
P=${1:?part}
. tools/device_session.sh
case $P in
a) # Session 54's part g. The record with the lead-ins (--model-cache-lead-ins, better on 8
   # of 9 kept plans in session 54's call 6) on the five models answered afresh in session
   # 53, whose plans the record was not developed on, and with the lead-ins' integer and
   # boolean results read where no lead-in writes integers in place
   # (--model-cache-lead-in-reads-from-producers), beside kc's default; then T5's and
   # BERT's graphs and Mistral's decode graph with the latter (T5 and BERT ran their
   # gathers out of bounds in session 54's call 5 reading every result)
   ways "${PLANS_A:-gpt2_decode_graph qwen2_decode_graph qwen3_moe_decode_graph vit_b_16_tf32 convnext_tiny_train}" \
     "far:" "lead:--model-cache-lead-ins" "leadp:--model-cache-lead-ins --model-cache-lead-in-reads-from-producers"
   ways "${PLANS_A2:-t5_graph_zw bert_infer_graph_zy mistral_decode_graph}" "leadp:--model-cache-lead-ins --model-cache-lead-in-reads-from-producers" ;;
esac
finish
