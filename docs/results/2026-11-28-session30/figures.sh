#!/bin/bash
# Session 30's figures, every report answered again by the committed kc from the calls'
# results files: each call's `kc run` times; each answer against the model's CUDA graph in
# the same call, with its round (which runs it counted) and the units measured again from
# the model's values; per restored unit the time alone against its kernels alone (CUPTI),
# whose sum over the round's entries sets the gap per switch; the isolated pass's time by
# restored and plain units (from their windows' starts). Call 1 answered T5's graph and
# EfficientNet-V2-S with four rounds at spread runs and with the first runs, on one
# capture each. Run from the repository root after `cargo build --release`:
#   bash docs/results/2026-11-28-session30/figures.sh > docs/results/2026-11-28-session30/figures.txt
set -eu
KC=${KC:-target/release/kc}
r=$(dirname "$0") w=$(mktemp -d)
calls="call1-a-kc-h call2-c-kc-i call3-d-kc-j call4-e-kc-j call5-f-kc-j"
for c in $calls; do
  mkdir -p $w/$c && tar xJf $r/$c.txz -C $w/$c
done
answer() { # CALL/PART NAME [KC-DIR]: the report's answer lines, as the committed kc gives them
  local dir=$w/$1/${3:-$2.kc}/$2
  $KC report $dir/plan.graph.json --isolated $dir/plan.isolated.context.json --reference $w/$1/reference.json \
    --reference-entry $2 -o $w/r/$1/$2${3:+.$3} --json > /dev/null
  echo "== $1 $2${3:+ ($3)}"
  grep -oE "The round of all [0-9]+ units \([^)]*\)" $w/r/$1/$2${3:+.$3}/report.md || true
  grep -E "^\| (Σ isolated × count \(plain\)|\+ gaps between kernels|\+ kernels slower|\*\*prediction from parts|model, CUDA graph|kc graph replay)" \
    $w/r/$1/$2${3:+.$3}/report.md | sed -E 's/\(energy: [^)]*\) //' | cut -c1-170
  grep -oE "[0-9]+ units ran their values away alone[^;]*(; [0-9]+ (was|were) found so[^.]*)?" $w/r/$1/$2${3:+.$3}/report.md | cut -c1-400 || true
  python3 - "$dir/plan.isolated.context.json" <<'PY'
import json, sys, re
a = json.load(open(sys.argv[1]))
rest = [u for u in a["units"] if u.get("restoring")]
gaps = sum(u["time_us"]["mean"] - u["launches_verified"]["kernels_us"]
           for u in rest if u.get("launches_verified") and u.get("time_us"))
early = sum(1 for u in rest if u["restoring"].get("found_after_timing"))
starts = {}
for x in a["windows"]:
    m = re.match(r"unit (\d+)", x["label"])
    if m:
        i = int(m.group(1)); starts[i] = min(starts.get(i, 1e30), x["start_unix_ms"])
ids = sorted(starts, key=starts.get); rid = {u["id"] for u in rest}
t = {"restored": 0.0, "plain": 0.0}
for p, q in zip(ids, ids[1:]):
    t["restored" if p in rid else "plain"] += (starts[q] - starts[p]) / 1e3
tr = a["isolated"].get("transitions") or {}
print("   isolated pass %s-%s, %d windows; %d restored (%d found after their timed launches), their time alone less kernels alone %.1f us in all; per unit %.2f s restored, %.3f s plain; gap per switch %.2f us"
      % (a["started"][11:19], a["finished"][11:19], len(a["windows"]), len(rest), early, gaps,
         t["restored"] / max(1, len(rid & set(ids))), t["plain"] / max(1, len(set(ids) - rid)),
         tr.get("round_gap_extra_us") or 0))
PY
}
echo "# kc run, per call (summary.txt)"
for c in call1-a-kc-h/a call2-c-kc-i/c call3-d-kc-j/d call4-e-kc-j/e call5-f-kc-j/f; do
  grep -E "rc=" $w/$c/summary.txt | sed "s|^|$c: |"
done
echo; echo "# The answers"
answer call1-a-kc-h/a t5_graph; answer call1-a-kc-h/a t5_graph t5_graph.again.kc
answer call1-a-kc-h/a effnet_v2_s; answer call1-a-kc-h/a effnet_v2_s effnet_v2_s.again.kc
answer call2-c-kc-i/c effnet_v2_s; answer call2-c-kc-i/c mixtral2l_prefill
answer call3-d-kc-j/d densenet121; answer call3-d-kc-j/d effnet_b0; answer call3-d-kc-j/d convnext_tiny_compiled
answer call4-e-kc-j/e t5_graph
answer call5-f-kc-j/f convnext_tiny_compiled
# Call 5: the same capture's units alone and round again, 12 cycles a launch (kc exec, no
# energy), against kc run's graph; and both rounds' cycles, timed and by difference.
c=$w/call5-f-kc-j/f n=convnext_tiny_compiled
$KC report $c/$n.kc/$n/plan.graph.json --isolated $c/$n.rc12.isolated.json --reference $c/reference.json \
  --reference-entry $n -o $w/r/rc12 --json > /dev/null
echo "== call5-f-kc-j/f $n (kc exec --isolated --round-cycles 12 --no-energy)"
grep -E "^\| (Σ isolated × count \(plain\)|\+ gaps between kernels|\+ kernels slower|\*\*prediction from parts)" $w/r/rc12/report.md | cut -c1-170
python3 - $c/$n.kc/$n/plan.isolated.context.json $c/$n.rc12.isolated.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    t = json.load(open(f))["isolated"]["transitions"]
    print("   %2d cycles a launch: cycle %.1f us (by difference %.1f ± %.1f), kernels %.1f us, gap per switch %.2f us"
          % (t["round_cycles"], t["round_cycle_us"], t["round_cycle_by_difference_us"],
             t["round_cycle_by_difference_sem_us"], t["round_kernels_us"], t["round_gap_extra_us"]))
PY
rm -rf "$w"
