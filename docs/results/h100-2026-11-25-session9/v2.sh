#!/bin/bash
# The values run's Execution Trace of Swin-T, for matching its boolean inputs offline.
set -u
R=$OUT/v2; mkdir -p $R
KC_KEEP_VALUES_ET=1 /opt/torch/.venv/bin/python traces/capture.py --model swin_t --batch 16 --name swin --out $R > $R/capture.log 2>&1
cd $R && gzip -f swin.values-run.et.json; tar cf ../v2.tar swin.values-run.et.json.gz swin.et.json.gz swin.values.bin capture.log reference.json
