import gzip, datetime, sys, bisect
from zoneinfo import ZoneInfo
tz=ZoneInfo("Europe/Berlin")
prices={}
for i,l in enumerate(gzip.open('/work/shared/traces/prices/epex-de-dayahead-hourly-2018-2023.csv.gz','rt')):
    if i==0: continue
    d,h,p=l.split(',')[:3]
    y,m,dd=map(int,d.split('-'))
    t=datetime.datetime(y,m,dd,int(h)-1,tzinfo=tz).timestamp()
    prices[int(t)]=float(p)
origin=int(datetime.datetime(2019,1,7,tzinfo=tz).timestamp())
hrs=sorted(prices)
def integ(a,b):
    # a,b absolute
    tot=0.0; t=a
    while t<b:
        h=t-(t-origin)%3600
        e=min(b,h+3600)
        tot+=prices.get(h,0)*(e-t); t=e
    return tot
jobs=[]
for l in gzip.open('/work/shared/traces/swf/%s.swf.gz'%sys.argv[1],'rt'):
    if l.startswith(';') or not l.strip(): continue
    f=l.split()
    sub,run,procs,req=int(f[1]),int(f[3]),int(f[4]),int(f[8])
    if procs<=0: procs=int(f[7])
    if run<=0 or procs<=0: continue
    jobs.append((sub,run,procs,req))
    if len(jobs)>=int(sys.argv[2]): break
first=jobs[0][0]
base=0; oracle=0; plan=0
for sub,run,procs,req in jobs:
    if req<=7200: continue
    s0=origin+sub-first
    c0=integ(s0,s0+run)*procs
    base+=c0
    best=min(integ(s0+k*900,s0+k*900+run) for k in range(0,97))*procs
    oracle+=best
    L=req
    ks=min(range(0,97),key=lambda k:(integ(s0+k*900,s0+k*900+L),k))
    plan+=integ(s0+ks*900,s0+ks*900+run)*procs
print(sys.argv[1], "base",round(base/1e9,2),"oracle",round(1-oracle/base,3),"limit-planned",round(1-plan/base,3))
