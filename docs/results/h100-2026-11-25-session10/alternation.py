import json,sys,glob,os
D=sys.argv[1]; n=sys.argv[2]
r=json.load(open(f'{D}/reference.json'))['results'][n]
g=r['cuda_graph']
print('capture  model  b2b %.1f us  E %.1f mJ  windows %s  temps %s'%(g['back_to_back_us'],g['back_to_back_energy_per_run_mj'],[round(x,1) for x in g.get('back_to_back_energy_windows_mj',[])],g.get('back_to_back_temperature_c')))
for i,m in enumerate(g.get('remeasured',[])):
    print('remeas%d model  b2b %.1f us  E %.1f mJ  windows %s  temps %s'%(i+1,m['back_to_back_us'],m['back_to_back_energy_per_run_mj'],[round(x,1) for x in m['back_to_back_energy_windows_mj']],m['back_to_back_temperature_c']))
it=r['profiled_iterations']
for f in sorted(glob.glob(f'{D}/*.graph.json')):
    d=json.load(open(f))
    ws=[w for w in d['windows'] if w['label']=='graph']
    per=[w['energy_j']/w['completed']/it*1000 for w in ws]
    t=d['graph']['replay_us']['p50']/it
    print('%-8s kc  %.1f us  E/it windows %s  temps %s'%(os.path.basename(f).split('.')[0], t, [round(x,1) for x in per], [w.get('temperature_c') for w in ws]))
