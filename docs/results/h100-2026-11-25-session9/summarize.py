import json,sys,os,glob
for d in sys.argv[1:]:
    ref=json.load(open(f'{d}/reference.json'))['results']
    for m in ref:
        r=ref[m]; eg=r['eager']; cg=r['cuda_graph']
        mus=cg.get('back_to_back_us') or eg.get('back_to_back_us'); me=cg.get('back_to_back_energy_per_run_mj') or eg.get('back_to_back_energy_per_run_mj')
        which='graph' if cg.get('back_to_back_us') else 'eager'
        for tag in ("own","prev","own2"):
            f=f'{d}/{m}.{tag}.graph.json'
            if not os.path.exists(f): continue
            g=json.load(open(f))['graph']; it=3
            fi=g.get('fidelity') or {}; mi=g.get('memory_image') or {}
            t=g['replay_us']['p50']/it; e=g['energy']['per_item_j']['p50']/it if g.get('energy') else float('nan')
            print('%-40s %-6s t/it %8.1f us model(%s) %8.1f %+5.1f%%  E/it %.4f J model %.4f %+5.1f%%  names %s/%s extra %s stepmed %.1f%%  nonfinite %s'%(m,tag,t,which,mus,(t/mus-1)*100,e,me/1000,(e*1000/me-1)*100,fi.get('kernels_name_matched'),fi.get('kernels_traced'),fi.get('kernels_extra'),fi.get('step_median_abs_error_pct',float('nan')),mi.get('nonfinite_share')))
