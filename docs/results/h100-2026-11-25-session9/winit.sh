#!/bin/bash
set -u
mkdir -p $OUT/w
/opt/torch/.venv/bin/python .device/winit.py > $OUT/w/winit.jsonl 2> $OUT/w/winit.err
cat $OUT/w/winit.jsonl; tail -3 $OUT/w/winit.err
