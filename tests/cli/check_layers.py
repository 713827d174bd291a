#!/usr/bin/python3
"""check_layers.py - the layer rules of src/ (run by tests/cli/test_layers.sh).

    check_layers.py ROOT BUILD [KNOWN]

ROOT holds src/, BUILD its objects (BUILD/src/dir/x.o for src/dir/x.c);
KNOWN lists circles being removed, one per line ("dir/a.c dir/b.c").
Prints what it checked and each violation; exits 1 if there is any.

The layers, lowest first (a file may include from its own folder or a
lower one): util, core, io, analysis, config, plan, plot, report, cli,
then src/main.c. A *_internal.h header is included only from its folder.
No circle of headers; no circle of files using each other, where a file
uses another when

- it calls a function or reads a variable the other's object defines (the
  symbols each object defines and uses, nm), or
- it names something a header defines (a static inline function, a macro,
  a type, a struct, union or enum tag, an enum constant) and that header
  belongs to the other: dir/x.h and dir/x_internal.h belong to dir/x.c
  when it exists; a header without such a file is a node of its own, whose
  uses count as well. So a helper shared through a header is seen as what
  it is, a part of the file the header belongs to, and a circle through it
  is one.
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
names = collections.defaultdict(set)  # node -> names it uses, with the node they come from

# uses through headers: the code a header carries, and who names it
def strip(text):  # comments, strings and character constants out, line breaks kept
    out = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                 lambda m: "\n" * m.group(0).count("\n") + " ", text, flags=re.S)
    return re.sub(r"\\\n", " ", out)

def header_code(text):
    """What a header defines that carries code or values, and that code: its
    macros (not its include guard) and its static inline functions, with
    their replacement lists and bodies. Types, tags, enum constants and
    prototypes are declarations: naming one uses nothing of another file."""
    code = strip(text)
    names, body = set(), []
    guard = re.search(r"^\s*#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+\1\b", code, re.M)
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)(.*)$", code, re.M):
        if not guard or m.group(1) != guard.group(1):
            names.add(m.group(1))
            body.append(m.group(2))
    code = re.sub(r"^\s*#.*$", " ", code, flags=re.M)
    # a function definition at file scope: "... static ... name(...) {" up to its "}"
    depth, start, open_at = 0, 0, None
    for m in re.finditer(r"[{};]", code):
        if m.group() == "{":
            if depth == 0:
                head = code[start:m.start()]
                f = re.search(r"(\w+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$", head)
                if f and re.search(r"\b(static|NC_VM_INLINE)\b", head):
                    names.add(f.group(1))
                    open_at = m.start()
            depth += 1
        elif m.group() == "}":
            depth -= 1
            if depth == 0:
                if open_at is not None:
                    body.append(code[open_at:m.end()])
                    open_at = None
                start = m.end()
        elif depth == 0:
            start = m.end()
    return names, " ".join(body)

def owner(h):  # "dir/x.h" -> "dir/x.c" (also for x_internal.h) when it exists, else h
    stem = h[:-2]
    for c in (stem + ".c", re.sub(r"_internal$", "", stem) + ".c"):
        if "src/" + c in incs:
            return c
    return h

hcode = {f[4:]: header_code(open(f).read()) for f in incs if f.endswith(".h")}
def reach(f):  # the project headers f includes, directly or through others
    seen, todo = set(), [h for h in incs[f] if "src/" + h in incs]
    while todo:
        h = todo.pop()
        if h not in seen:
            seen.add(h)
            todo += [x for x in incs["src/" + h] if "src/" + x in incs]
    return seen
for f in incs:
    # a header's code counts for the file it belongs to, or for itself
    node = owner(f[4:]) if f.endswith(".h") else f[4:]
    text = hcode[f[4:]][1] if f.endswith(".h") else strip(open(f).read())
    idents = set(re.findall(r"[A-Za-z_]\w*", text))
    for h in reach(f):
        o = owner(h)
        if o != node:
            for n in idents & hcode[h][0]:
                names[node].add((n, o))
                fgraph.setdefault(node, set()).add(o)
    if f.endswith(".h"):  # and what it calls, as in the objects
        for n in idents:
            if n in defs and defs[n] != node:
                names[node].add((n, defs[n]))
                fgraph.setdefault(node, set()).add(defs[n])
print("files in the graph:", len(fgraph), "edges:", sum(len(v) for v in fgraph.values()))
knownset = {" ".join(sorted(l.split())) for l in known.splitlines() if l.strip()}
found = set()
for c in cycles(fgraph):
    key = " ".join(c)
    found.add(key)
    why = "; ".join(f"{a} uses " + ", ".join(sorted({s for s in uses[a] if defs.get(s) == b} |
                                                   {n for n, o in names[a] if o == b}))
                    + f" of {b}" for a in c for b in c if b in fgraph.get(a, ()))
    if key in knownset:
        print("known circle (being removed):", key)
    else:
        fail(f"files use each other in a circle: {key} ({why})")
for k in sorted(knownset - found):
    fail(f"the circle {k} is gone: remove it from KNOWN in tests/cli/test_layers.sh")
print("violations:", bad)
sys.exit(1 if bad else 0)
