import json,sys,os
d=sys.argv[1]; os.chdir(d)
r=json.load(open('reference.json'))['results']
for m in r:
    v=r[m].get('values') or {}
    print(m, 'values:', {k:v[k] for k in v if k!='left_out'}, v.get('left_out'))
    ref=r[m]; eg=ref['eager']; cg=ref['cuda_graph']
    model_us = cg.get('back_to_back_us') or eg.get('back_to_back_us'); model_e = cg.get('back_to_back_energy_per_run_mj') or eg.get('back_to_back_energy_per_run_mj')
    which = 'graph' if cg.get('back_to_back_us') else 'eager'
    for tag,f in [('values',m+'.graph.json'),('novalues',m+'.novalues.graph.json')]:
        g=json.load(open(f)); gg=g['graph']
        it = max(1, (json.load(open(m+'.plan.json')).get('summary',{}) or {}).get('iterations',3)) if False else 3
        fi=gg['fidelity']; mi=gg.get('memory_image',{})
        t=gg['replay_us']['p50']/3; e=gg['energy']['per_item_j']['p50']/3 if gg.get('energy') else float('nan')
        nf=[k for k in mi if 'finite' in k]
        print('  %-8s time/it %.1f us (model %s %.1f: %+.1f%%)  E/it %.4f J (%+.1f%%)  names %d/%d copies %d extra %d stepmed %.1f%% %s'%(tag,t,which,model_us,(t/model_us-1)*100,e,(e*1000/model_e-1)*100,fi['kernels_name_matched'],fi['kernels_traced'],fi.get('copy_kernels',0),fi['kernels_extra'],fi['step_median_abs_error_pct'], {k:mi[k] for k in nf}))
        for w in fi['worst_units'][:4]: print('        ',w['label'],w['steps'],round(w['traced_us'],1),round(w['in_context_us'],1),'%+.1f'%w['median_error_pct'])
    for l in open(m+'.graph.log'):
        if 'recorded values' in l: print('   ',l.strip()[:160])
