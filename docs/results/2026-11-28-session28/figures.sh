#!/bin/bash
# Session 28's figures, every report answered again by the committed kc from the calls'
# results files: each call's `kc run` times, the answers against the model's CUDA graph in
# the same call, the kill of call 1's second run at its checkpoint, and the kinds tables of
# T5's graph (call 2), DenseNet-121 (call 5) and GPT-2's training step (call 6). The H100 chart's counts come from h100.sh.
# Run from the repository root after `cargo build --release`:
#   bash docs/results/2026-11-28-session28/figures.sh > docs/results/2026-11-28-session28/figures.txt
set -eu
KC=${KC:-target/release/kc}
r=$(dirname "$0") w=$(mktemp -d)
for c in call1-e-kc-b call2-h-kc-c call3-f-kc-c call4-g-kc-c call5-i-kc-c call6-j-kc-c; do
  mkdir -p $w/$c && tar xJf $r/$c.txz -C $w/$c
done
answer() { # CALL/PART NAME [KC-DIR]: the report's answer lines, as the committed kc gives them
  local dir=$w/$1/${3:-$2.kc}/$2
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$1/reference.json \
    --reference-entry $2 -o $w/r/$1/$2${3:+.$3} --json > /dev/null
  echo "== $1 $2${3:+ ($3)}"
  grep -E "^\*\*Not a whole run|^\| (Σ isolated × count \(plain\)|\*\*prediction from parts|model, CUDA graph|kc graph replay)" \
    $w/r/$1/$2${3:+.$3}/report.md | sed -E 's/\(energy: [^)]*\) //' | cut -c1-160
}
kinds() { # CALL/PART NAME: the kinds tables
  echo "== $1 $2: each kind in the model's program"
  sed -n '/^## Each kind/,/^Traced time/p' $w/r/$1/$2/report.md | grep '^|\|^Steps\|^The kinds'
}
echo "# kc run, per call (summary.txt)"
for c in call1-e-kc-b/e call2-h-kc-c/h call3-f-kc-c/f call4-g-kc-c/g call5-i-kc-c/i call6-j-kc-c/j; do
  grep -E "rc=|results so far|Not a whole run" $w/$c/summary.txt | sed "s|^|$c: |"
done
echo; echo "# The answers"
answer call1-e-kc-b/e t5_graph; answer call1-e-kc-b/e t5_graph t5_graph.killed.kc
answer call2-h-kc-c/h t5_graph
for n in gpt2_train_graph resnet50_train_sgd densenet121; do answer call3-f-kc-c/f $n; done
for n in mobilenet_v3_large regnet_y_3_2gf maxvit_t; do answer call4-g-kc-c/g $n; done
answer call5-i-kc-c/i densenet121
answer call6-j-kc-c/j gpt2_train_graph
echo; echo "# The kinds in the program"
kinds call2-h-kc-c/h t5_graph; kinds call5-i-kc-c/i densenet121; kinds call6-j-kc-c/j gpt2_train_graph
rm -rf "$w"
