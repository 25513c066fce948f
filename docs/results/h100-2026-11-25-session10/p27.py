import json, sys, glob, os
for d in sys.argv[1:]:
    for rj in sorted(glob.glob(f'{d}/*/*/report/report.json')):
        n = rj.split('/')[1]
        r = json.load(open(rj)); m = r['model']; rows = {x['what']: x for x in m['rows']}
        def f(key):
            x = next((v for k, v in rows.items() if k.startswith(key)), None)
            return x
        g, p, s = f('kc graph replay'), f('kc prediction'), f('Σ isolated')
        t = m['reference']['cuda_graph'].get('temperature') or {}
        pu = 2*p['time_u_us']/ (p['time_us']/(1+p['time_vs_model_pct']/100)) *100 if p and p.get('time_u_us') else None
        units = len(r.get('units', []))
        tm = open(f'{d}/{n}.time').read().strip()
        print(f"| {n} | {units} | {s['time_vs_model_pct']:+.1f} % | **{p['time_vs_model_pct']:+.1f} % ± {pu:.1f}** | {g['time_vs_model_pct']:+.1f} % | {s['energy_vs_model_pct']:+.1f} % | **{p['energy_vs_model_pct']:+.1f} %** | {g['energy_vs_model_pct']:+.1f} % | {t.get('windows_used')}/{t.get('windows')} at {t.get('kc_c')} °C{'' if t.get('matched') else ' (nearest)'} | {int(tm.split()[0])/1000:.0f} |")
