"""Session 50: the round's kernels set against a unit alone at the step the round ran it (f13c956)
where that record ran over both its timed launches alone and its kernels in the round by 5 %,
while its record over all its steps did not (busy time, CUPTI): per answer, those units (unit,
invocations, at the step, over all steps, in the round, timed, us; and what setting them against
all their steps would add to the round's term, us per replay). A candidate rule, not adopted:
it moves ResNeXt-101 32x8d toward the model and RegNetY-1.6GF's step, T5's graph, BLOOM's and
LLaMA's steps away. Run on the results chart.sh unpacked:

    W=/tmp/wc50 bash docs/results/2026-11-29-session50/chart.sh
    python3 docs/results/2026-11-29-session50/at_step_scan.py /tmp/wc50
"""
import json, glob, os, sys
tot=0
for f in sorted(glob.glob(sys.argv[1] + '/*/*/*.kc/*/plan.isolated.context.json')):
    d=json.load(open(f))
    t=(d.get('isolated') or {}).get('transitions') or {}
    ks=t.get('round_unit_kernels') or []
    units={u['id']:u for u in d['units']}
    hits=[]
    for k in ks:
        if not k.get('alone_at_step'): continue
        u=units.get(k['unit']); 
        if not u or not u.get('time_us'): continue
        lv=u.get('launches_verified') or {}
        if k.get('round_busy_us') is None or lv.get('busy_us') is None: continue
        time=u['time_us']['mean']
        at=k['alone_busy_us']; mean=lv['busy_us']; rnd=k['round_busy_us']
        if at > 1.05*max(rnd,time) and not (mean > 1.05*max(rnd,time)):
            hits.append((k['unit'], u.get('invocations'), round(at,2), round(mean,2), round(rnd,2), round(time,2), round((at-mean)*u['invocations'],1)))
    if hits:
        name=f.split('/')[-2]
        eff=sum(h[-1] for h in hits)
        call, part = f.split('/')[-5], f.split('/')[-4]
        rep = f"{sys.argv[1]}/r/{call}/{part}/{name}/report.json"
        if not os.path.exists(rep):  # an answer the chart does not take
            rep = ""
        est = ""
        try:
            pr = json.load(open(rep))["prediction"]
            # The report's figures are per replay, as the term's shift is.
            after = pr["error_pct"] + 100.0 * eff / pr["target_us"]
            est = f"; prediction {pr['error_pct']:+.2f} % -> about {after:+.2f} %"
        except (OSError, KeyError):
            pass
        print(call, name, len(ks), 'hits', len(hits), 'term shift per replay us %.1f%s' % (eff, est))
        for h in hits: print('    ', h)
