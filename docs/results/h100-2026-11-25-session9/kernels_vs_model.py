# Kernel by kernel: kc's graph replay (CUPTI, `kc exec --verify --kernels-out`) against the
# model's own CUDA graph replay (its profiled trace), aligned by name in order, summed by
# kernel family. Usage: python3 kernels_vs_model.py KCVERIFY.json MODEL.pt.trace.json.gz
import json, gzip, collections, subprocess, difflib, sys
kc = json.load(open(sys.argv[1]))
t = json.load(gzip.open(sys.argv[2]))
ev = sorted((e for e in t['traceEvents'] if e.get('ph') == 'X' and e.get('cat') == 'kernel'), key=lambda e: e['ts'])
dm = subprocess.run(['c++filt'], input='\n'.join(k['name'] for k in kc), capture_output=True, text=True).stdout.split('\n')[:len(kc)]
sm = difflib.SequenceMatcher(a=[e['name'][:50] for e in ev], b=[x[:50] for x in dm], autojunk=False)
pairs = [(b.a + j, b.b + j) for b in sm.get_matching_blocks() for j in range(b.size)]
kd = [(k['end_ns'] - k['start_ns']) / 1000 for k in kc]
print('model kernels %d, kc %d, aligned %d; sums: model %.1f us, kc %.1f us (%+.2f %%)' % (
    len(ev), len(kc), len(pairs), sum(e['dur'] for e in ev), sum(kd), (sum(kd) / sum(e['dur'] for e in ev) - 1) * 100))
agg = collections.defaultdict(lambda: [0, 0, 0])
for i, j in pairs:
    nm = ev[i]['name']
    key = ('nvjet ' + nm[:45]) if nm.startswith('nvjet') else nm.replace('void ', '').split('<')[0][:55]
    g = agg[key]; g[0] += ev[i]['dur']; g[1] += kd[j]; g[2] += 1
for k, (m, c, n) in sorted(agg.items(), key=lambda x: -(x[1][1] - x[1][0]))[:8]:
    print('%-62s n=%4d model %8.1f kc %8.1f  %+7.1f us (%+.1f %%)' % (k, n, m, c, c - m, (c / m - 1) * 100))
