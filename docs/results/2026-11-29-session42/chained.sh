#!/bin/bash
# Session 42: how much of each kept plan's traced time lies in units whose places chain (a
# result one invocation writes overlaps an operand another reads: alone, later invocations
# read what earlier ones wrote), as `kc plan show` says it, over the plans earlier calls kept
# (PLANS=1) and Swin3D-T's (call 2, KEEP=1). Run from the repository root after
# `cargo build --release`: bash docs/results/2026-11-29-session42/chained.sh
set -eu
KC=${KC:-target/release/kc} w=$(mktemp -d) r=docs/results
for c in 2026-11-27-session22/call1-a-kc-i 2026-11-27-session24/call2-b-kc-p 2026-11-28-session29/call4-o-kc-f \
  2026-11-28-session30/call3-d-kc-j 2026-11-28-session31/call1-a-kc-k 2026-11-28-session31/call2-b-kc-k \
  2026-11-28-session31/call3-c-kc-k 2026-11-28-session31/call6-d-kc-k 2026-11-28-session32/call2-f-kc-m \
  2026-11-28-session32/call3-g-kc-m; do
  mkdir -p $w/$c; tar xJf $r/$c.txz -C $w/$c --wildcards '*/plans/*'
done
find $w -name "*.kcplan.xz" -exec xz -d {} \;
mkdir -p $w/s42; tar xJf $r/2026-11-29-session42/call2-b-kc-zg.txz -C $w/s42 b/swin3d_t.kc/swin3d_t/plan.kcplan
for p in $(find $w -name "*.kcplan" | sort); do
  echo "$(echo $p | sed "s|$w/||"): $($KC plan show $p | grep -o '[0-9]* of [0-9]* units of several invocations chain.*')"
done
rm -rf $w
