"""Call 1's EfficientNet-V2-S answer (kc-h, round of first runs) with its 19 restored units'
kernels alone as their restoring graphs recorded them in call 2 (kc-i), each scaled by the
two calls' restoring times, and the round's gap per switch recomputed over the round's
entries (effnet_round_order.txt: unit and counted, from kc_core::plan::schedule::round_order
on call 1's plan with one lead-in step and each unit's first run). Writes the patched
results; `kc report` on them gives the prediction call 1 would have read with the fix.
Run from the repository root after extracting call1-a-kc-h.txz and call2-c-kc-i.txz into
/tmp/s30/a and /tmp/s30/c:
  python3 docs/results/2026-11-28-session30/effnet_split.py > /tmp/s30/effa_patched.json
"""
import json, os
here = os.path.dirname(__file__)
a = json.load(open('/tmp/s30/a/a/effnet_v2_s.kc/effnet_v2_s/plan.isolated.context.json'))
c = json.load(open('/tmp/s30/c/c/effnet_v2_s.kc/effnet_v2_s/plan.isolated.context.json'))
C = {u['id']: u for u in c['units']}
order = [int(l.split()[0]) for l in open(os.path.join(here, 'effnet_round_order.txt'))]
new = {}
for u in a['units']:
    if u.get('restoring') and u.get('launches_verified'):
        cu = C[u['id']]
        k = cu['launches_verified']['kernels_us'] * u['time_us']['mean'] / cu['time_us']['mean']
        new[u['id']] = (u['launches_verified']['kernels_us'], k)
        u['launches_verified']['kernels_us'] = k
t = a['isolated']['transitions']
shift = sum(new[x][0] - new[x][1] for x in order if x in new)
t['round_gap_extra_us'] -= shift / t['round_switches']
for e in t['round_unit_kernels']:
    if e['unit'] in new:
        e['alone_us'] = new[e['unit']][1]
print(json.dumps(a))
