import json, glob, sys
for d in sys.argv[1:]:
    for rj in sorted(glob.glob(f'{d}/*/*/report/report.json')):
        n = rj.split('/')[-4]
        r = json.load(open(rj)); p = r['prediction']
        T = p['target_us']; E = p.get('target_energy_j')
        if not T: continue
        plain = p['plain_us']; pe = p['plain_energy_j']
        terms = {t['what'].split(' (')[0][:22]: (t['us'], t.get('energy_j')) for t in p['terms']}
        gap = sum(v[0] for k,v in terms.items() if k.startswith('gaps'))
        slow = sum(v[0] for k,v in terms.items() if k.startswith('kernels slower'))
        other = sum(v[0] for k,v in terms.items()) - gap - slow
        ge = sum((v[1] or 0) for k,v in terms.items() if k.startswith('gaps'))
        se = sum((v[1] or 0) for k,v in terms.items() if k.startswith('kernels slower'))
        oe = sum((v[1] or 0) for k,v in terms.items()) - ge - se
        pct = lambda x, t: 100*(x/t-1)
        print(f"{n[:28]:28s} plain {pct(plain,T):+6.1f} gap {100*gap/T:+5.1f} slow {100*slow/T:+5.1f} other {100*other/T:+5.1f} -> {pct(p['predicted_us'],T):+6.1f} | no-slow {pct(plain+gap+other,T):+6.1f} || E plain {pct(pe,E):+6.1f} gap {100*ge/E:+5.1f} slow {100*se/E:+5.1f} oth {100*oe/E:+5.1f} -> {pct(p['predicted_energy_j'],E):+6.1f}")
