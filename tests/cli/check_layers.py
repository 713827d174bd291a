#!/usr/bin/python3
"""check_layers.py - the layer rules of src/ (run by tests/cli/test_layers.sh).

    check_layers.py ROOT BUILD [KNOWN]

ROOT holds src/, BUILD its objects (BUILD/src/dir/x.o for src/dir/x.c);
KNOWN lists circles being removed, one per line ("dir/a.c dir/b.c").
Prints what it checked and each violation; exits 1 if there is any.

The layers, lowest first (a file may include from its own folder or a
lower one): util, core, io, analysis, config, plan, plot, report, cli,
then src/main.c. A *_internal.h header is included only from its folder.
No circle of headers; no circle of files calling each other, read from
the symbols each object defines and uses (nm).
"""
import collections, glob, os, re, subprocess, sys

root, build, known = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
os.chdir(root)
ORDER = ["util", "core", "io", "analysis", "config", "plan", "plot", "report", "cli", "."]
rank = {d: i for i, d in enumerate(ORDER)}
bad = 0

def fail(msg):
    global bad
    bad += 1
    print("FAIL:", msg)

def folder(path):  # "src/io/npy.c" -> "io", "src/main.c" -> "."
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else "."

files = sorted(glob.glob("src/*.[ch]") + glob.glob("src/*/*.[ch]"))
incs = {}
for f in files:
    d = folder(f)
    if d not in rank:
        fail(f"{f}: folder {d}/ has no place in the layer order of tests/cli/check_layers.py")
        continue
    incs[f] = re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(f).read(), re.M)
    for h in incs[f]:
        hd = h.split("/")[0] if "/" in h else "?"
        if hd not in rank:
            fail(f"{f}: #include \"{h}\": not a path under src/ (folder/name.h)")
        elif rank[hd] > rank[d]:
            fail(f"{f}: #include \"{h}\": {d}/ must not include from {hd}/, a higher layer")
        if h.endswith("_internal.h") and hd != d:
            fail(f"{f}: #include \"{h}\": internal to {hd}/")
print("include lines checked:", sum(len(v) for v in incs.values()))

def cycles(graph):  # strongly connected components with more than one node
    index, low, stack, on, out = {}, {}, [], set(), []
    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v); on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(100000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out

hgraph = {f[4:]: {h for h in incs[f] if "src/" + h in incs} for f in incs if f.endswith(".h")}
for c in cycles(hgraph):
    fail("headers include each other in a circle: " + " ".join(c))

# file graph from the objects of the build
srcs = [f for f in files if f.endswith(".c")]
defs, uses = {}, collections.defaultdict(set)
for f in srcs:
    o = f"{build}/{f[:-2]}.o"
    if not os.path.exists(o):
        fail(f"{o}: missing (build first)")
        continue
    for line in subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRVWG":
            defs[p[2]] = f[4:]
        elif len(p) == 2 and p[0] == "U":
            uses[f[4:]].add(p[1])
fgraph = {f: {defs[s] for s in uses[f] if s in defs and defs[s] != f} for f in uses}
print("files in the call graph:", len(fgraph), "edges:", sum(len(v) for v in fgraph.values()))
knownset = {" ".join(sorted(l.split())) for l in known.splitlines() if l.strip()}
found = set()
for c in cycles(fgraph):
    key = " ".join(c)
    found.add(key)
    why = "; ".join(f"{a} uses {', '.join(sorted(s for s in uses[a] if defs.get(s) == b))} of {b}"
                    for a in c for b in c if b in fgraph[a])
    if key in knownset:
        print("known circle (being removed):", key)
    else:
        fail(f"files call each other in a circle: {key} ({why})")
for k in sorted(knownset - found):
    fail(f"the circle {k} is gone: remove it from KNOWN in tests/cli/test_layers.sh")
print("violations:", bad)
sys.exit(1 if bad else 0)
