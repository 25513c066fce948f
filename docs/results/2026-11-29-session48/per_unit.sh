#!/bin/bash
# Session 48: per unit, alone (its kernels, CUPTI) and in kc's graph against its kernels in
# the model's own graph, and alone against kc's graph (deliverable 3), on the session's
# eight answers, from reports regenerated with the committed kc (plans kept, `PLANS=1`).
# Run from the repository root after `cargo build --release`, with W the folder
# chart.sh kept (`W=W bash docs/results/2026-11-29-session48/chart.sh`):
#   bash docs/results/2026-11-29-session48/per_unit.sh W
set -eu
W=$1 KC=${KC:-target/release/kc}
for cp in call1-a-kc-zr/a:llama_train call1-a-kc-zr/a:qwen2_train call1-a-kc-zr/a:effnet_b0_train \
  call2-c-kc-zs/c:effnet_b0_train call2-c-kc-zs/c:mobilenet_v3_train call3-b-kc-zt/b:llama_decode_graph \
  call3-b-kc-zt/b:mixtral_decode_graph call3-b-kc-zt/b:effnet_v2_s_train; do
  d=$W/${cp%%:*} n=${cp##*:}
  xz -dkf $d/plans/$n.kcplan.xz
  $KC report $d/$n.kc/$n/plan.graph.json --isolated $d/$n.kc/$n/plan.isolated.context.json \
    --plan $d/plans/$n.kcplan --reference $d/reference.json --reference-entry $n \
    -o $W/per_unit/${cp%%:*}/$n --json > $W/per_unit.json
  python3 - "$cp" $W/per_unit.json <<'PY'
import json, sys
t = json.load(open(sys.argv[2]))["time"]
f = lambda k: t.get(k)
print(f"{sys.argv[1]:40s} alone vs kc's graph {f('unit_isolated_vs_in_context_median_abs_pct'):5.1f} % "
      f"({f('units_isolated_vs_in_context')}); alone vs the model's graph "
      f"{f('unit_isolated_vs_model_graph_median_abs_pct'):5.1f} % ({f('units_isolated_vs_model_graph')}); "
      f"kc's graph vs the model's {f('unit_kc_graph_vs_model_graph_median_abs_pct'):4.1f} % "
      f"({f('units_kc_graph_vs_model_graph')})")
PY
done
