#!/bin/bash
# Session 55's GPU calls. PART names a measurement; tools/device_session.sh sets up the
# call and defines `ways`, `model` and `twice` (`twice` was this file's own until the
# session's reading moved it there, its ORDER then way names, `full` meaning
# --energy-full-queue; the same commands written as "name:flags" now). Run from the repository root with the
# binary in .device/bin (KC=) and the plans in .device/plans; BUDGET (s) skips what would
# start after it. Results go to $OUT/PART.txz.
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
b) # kc run's time (issue 27, deliverable 6) with each energy series' last window queuing
   # launches only to 10 ms past its predicted tick (kc's default from kc-zz22), against
   # the full 32 ms queue as before (--energy-full-queue), on one capture each, both runs
   # in this call, then the model measured again and both reported: ConvNeXt-T's training
   # step (134 units, 88.4 s in session 53) and T5's graph (112 units, 55.9 s in session
   # 49); also the first answers with the record's lead-ins as kc's default
   twice convnext_tiny_train --model convnext_tiny --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused
   twice t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph ;;
c) # Call 2 found kc run no faster with the bounded queue (ConvNeXt-T's step 92.6 s, 90.7 s
   # with the full queue; T5's graph 59.2 and 60.2 s), a unit's 43 ms after its windows
   # alike. Again on ConvNeXt-T's step, the full queue first this time, with each unit's
   # queue at its series' end, the wait for it and the rest after its windows in the
   # results (setup_ms.queued, drain, after; kc-zz23), the model not measured again
   ORDER="full:--energy-full-queue kc:" NO_REMEASURE=1 twice convnext_tiny_train --model convnext_tiny --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused ;;
d) # Call 3: the bounded queue cut each unit's wait after its windows (29.2 -> 16.1 ms) but
   # not kc run's time: from a window's end to the next unit's timed launches stayed about
   # 95 ms, and units whose timed launches began 60-80 ms after it still took two ticks.
   # Where does the time from the timed launches' start to the windows go? Each unit's
   # enqueue of its timed launches and from it to the series' wait for a tick in the
   # results (setup_ms.enqueue_timed, to_series; kc-zz24), ConvNeXt-T's step once
   ORDER="kc:" NO_REMEASURE=1 twice convnext_tiny_train --model convnext_tiny --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused ;;
e) # Call 4: a fifth of ConvNeXt-T's units waited 30-45 ms in the enqueue of their timed
   # launches (a full queue) before their energy series watched the counter, and a tick
   # passed unwatched. With the timed launches enqueued inside the series (kc-zz25), its
   # ticks watched from the first launch: ConvNeXt-T's step and T5's graph once each, the
   # models not measured again
   ORDER="kc:" NO_REMEASURE=1 twice convnext_tiny_train --model convnext_tiny --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused
   ORDER="kc:" NO_REMEASURE=1 twice t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph ;;
f) # A model new to kc answered with session 55's defaults (kc-zz25): RegNetX-1.6GF's
   # training step (bf16, channels last, fused AdamW), captured, answered by kc run, the
   # model measured again in the same call
   RUN_TIMEOUT=140 model regnetx16_train --model regnet_x_1_6gf --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused ;;
g) # Not run in session 55 (its device time spent): the next call. Call 5 left 19.5 ms of
   # a changeover in no field; each unit's results now time the take-back and bookkeeping
   # between units, the sizing probe and the tick watcher's end (setup_ms.between, probe,
   # join; a92551c). ConvNeXt-T's step and T5's graph once each, the models not measured
   # again; then `python3 docs/results/2026-11-30-session55/records_apart.py` on it
   ORDER="kc:" NO_REMEASURE=1 twice convnext_tiny_train --model convnext_tiny --batch 32 --dtype bf16 --channels-last --mode train --optimizer adamw-fused
   ORDER="kc:" NO_REMEASURE=1 twice t5_graph --model t5 --batch 4 --seq 256 --dtype bf16 --cuda-graph ;;
esac
finish
