"""Sorts the stores a lackey trace made between the two marker stores of walk-stores by the
address ranges it printed: usage `classify.py OUT TRACE CALLS`."""
import sys, re
ranges=[]; mark=None; stack=None
for line in open(sys.argv[1]):
    w=line.split()
    if w[0]=='mark': mark=int(w[1],16)
    elif w[0]=='stack': stack=int(w[1],16)
    elif w[0] in('node','buf'): ranges.append((w[0]+w[1],int(w[2],16),int(w[3],16)))
depth=max(int(n[4:]) for n,_,_ in ranges if n.startswith('node'))+1
counts={}; inside=False; marks=0
for line in open(sys.argv[2]):
    if not line.startswith(' S ') and not line.startswith(' M '): continue
    addr=int(line[3:].split(',')[0],16)
    if addr==mark:
        marks+=1; inside = (marks==1)
        continue
    if not inside: continue
    kind='other'
    for name,a,b in ranges:
        if a<=addr<b: kind=name; break
    else:
        if stack and abs(addr-stack) < (8<<20): kind='stack'
    counts[kind]=counts.get(kind,0)+1
calls=int(sys.argv[3])
above=sum(v for k,v in counts.items() if k.startswith('node') and int(k[4:])<depth-1)
bufs=sum(v for k,v in counts.items() if k.startswith('buf'))
leaf=counts.get('node%d'%(depth-1),0)
print(f"depth {depth}: per call: nodes above the leaf {above/calls:g}, leaf node {leaf/calls:g}, children buffers {bufs/calls:g}, stack {counts.get('stack',0)/calls:g}, other (the thread's epoch slot, allocator, ...) {counts.get('other',0)/calls:g}")
