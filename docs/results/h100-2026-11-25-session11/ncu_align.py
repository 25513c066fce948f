"""Kernel-by-kernel Nsight Compute counters (graph nodes profiled one by one, caches as
the previous kernel left them): kc's first 400 kernels of one replay aligned by name to the
model's graph (one iteration). Usage: python3 ncu_align.py KC.csv MODEL.csv"""
import csv, difflib, re, sys, collections
def rows(p):
    with open(p) as f:
        lines=[l for l in f if l.startswith('"')]
    out={}; names={}
    for r in csv.DictReader(lines):
        i=int(r["ID"]); out.setdefault(i,{})[r["Metric Name"]]=float(r["Metric Value"].replace(",",""))
        names[i]=(r["Kernel Name"],r["Grid Size"],r["Block Size"])
    return [ (names[i],out[i]) for i in sorted(out)]
def short(n):
    n=n[0]
    m=re.search(r"(elementwise_kernel|vectorized_elementwise_kernel|reduce_kernel|nvjet[^ (]*|[A-Za-z0-9_]+)(<|\()",n)
    return m.group(1) if m else n[:40]
k=rows(sys.argv[1]); m=rows(sys.argv[2])
sm=difflib.SequenceMatcher(a=[x[0][0] for x in m], b=[x[0][0] for x in k], autojunk=False)
pairs=[]
for a,b,sz in sm.get_matching_blocks():
    for j in range(sz): pairs.append((m[a+j],k[b+j]))
print("model kernels",len(m),"kc kernels",len(k),"aligned",len(pairs))
keys=["gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum","lts__t_sectors.sum","lts__t_sectors_srcunit_tex_aperture_device_op_read_lookup_miss.sum","sm__inst_executed.sum"]
tot={s:collections.Counter() for s in ("m","k")}
by=collections.defaultdict(lambda: {s:collections.Counter() for s in ("m","k")})
for (mn,mv),(kn,kv) in pairs:
    c=short(mn)
    for key in keys:
        tot["m"][key]+=mv.get(key,0); tot["k"][key]+=kv.get(key,0)
        by[c]["m"][key]+=mv.get(key,0); by[c]["k"][key]+=kv.get(key,0)
    by[c]["m"]["n"]+=1
for key in keys:
    a,b=tot["m"][key],tot["k"][key]
    print(f"{key:70s} model {a:16,.0f} kc {b:16,.0f} {100*(b/a-1) if a else 0:+.1f}%")
print()
print(f"{'kernel kind':34s} {'n':>4s} {'time m us':>10s} {'dT%':>6s} {'DRAM rd m MB':>12s} {'kc MB':>8s} {'DRAM wr m MB':>12s} {'kc MB':>8s}")
for c,v in sorted(by.items(), key=lambda x:-x[1]["m"]["gpu__time_duration.sum"]):
    M,K=v["m"],v["k"]
    t=M["gpu__time_duration.sum"]
    print(f"{c[:34]:34s} {M['n']:4d} {t/1e3:10.1f} {100*(K['gpu__time_duration.sum']/t-1):+6.1f} {M['dram__bytes_read.sum']/1e6:12.1f} {K['dram__bytes_read.sum']/1e6:8.1f} {M['dram__bytes_write.sum']/1e6:12.1f} {K['dram__bytes_write.sum']/1e6:8.1f}")
print()
print("per-kernel largest instruction / time differences")
rowsd=[]
for (mn,mv),(kn,kv) in pairs:
    di=kv["sm__inst_executed.sum"]-mv["sm__inst_executed.sum"]
    dt=kv["gpu__time_duration.sum"]-mv["gpu__time_duration.sum"]
    dr=kv["dram__bytes_read.sum"]+kv["dram__bytes_write.sum"]-mv["dram__bytes_read.sum"]-mv["dram__bytes_write.sum"]
    rowsd.append((di,dt,dr,mn,kn,mv,kv))
print("inst diff by kind:")
c=collections.Counter()
for di,dt,dr,mn,kn,mv,kv in rowsd: c[short(mn)]+=di
for kk,v in c.most_common(8): print(f"  {kk:40s} {v:14,.0f}")
for di,dt,dr,mn,kn,mv,kv in sorted(rowsd,key=lambda r:-abs(r[1]))[:15]:
    print(f"dt {dt/1e3:+7.2f}us ({mv['gpu__time_duration.sum']/1e3:7.1f}) dinst {di:+12,.0f} dDRAM {dr/1e6:+7.1f}MB {mn[0][:60]} {mn[1]} {kn[1]}")
