#!/bin/bash
# The committed pricing (every term's time at the idle power) against the round's own energy
# (--switch-energy-from-round, the pricing the device reports used) on the earlier sessions'
# issue-27 results (sessions 11-13), from their results files, no GPU. The second pricing
# reproduces the device reports' figures (printed beside). From the repository root after
# `cargo build --release`.
set -eu
KC=${KC:-target/release/kc}
R=docs/results w=$(mktemp -d)
for t in $R/h100-2026-11-25-session11/call6-pr-a.txz $R/h100-2026-11-25-session11/call7-pr-b.txz \
         $R/h100-2026-11-25-session12/call2-pn-c.txz $R/h200-2026-11-26-session13/call3-d-*.txz; do
  b=$(basename $t .txz); mkdir -p $w/$b; tar xJf $t -C $w/$b
done
ex='import json,sys; p=json.load(sys.stdin)["prediction"]; print("%+.1f / %+.1f | %+.1f / %+.1f" % (p["plain_error_pct"], p["plain_energy_error_pct"], p["error_pct"], p["energy_error_pct"]))'
echo "call model | plain Σ time / energy | prediction (idle power) | prediction (--switch-energy-from-round) | the device's report"
cd $w
for iso in $(find . -name "plan.isolated.*.json" | sort); do
  dir=$(dirname $iso) n=$(basename $(dirname $iso))
  ref=$(dirname $(dirname $dir))/reference.json; [ -f $ref ] || ref=$(dirname $(dirname $(dirname $dir)))/reference.json
  r() { $OLDPWD/$KC report $dir/plan.graph.json --isolated $iso --reference $ref --reference-entry $n -o $w/r "$@" --json | python3 -c "$ex"; }
  a=$(r); b=$(r --switch-energy-from-round)
  dev=$(python3 -c "import json;p=json.load(open('$dir/report/report.json'))['prediction'];print('%+.1f / %+.1f'%(p['error_pct'],p['energy_error_pct']))")
  echo "$(echo $iso | cut -d/ -f2) $n | $a | ${b##* | } | $dev"
done
cd - > /dev/null; rm -rf $w
