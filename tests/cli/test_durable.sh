# test_durable.sh - outputs reach the disk before they are put in place
# (docs/outputs.md "Durability"): the system calls of a run, seen by
# strace, show every output file flushed (fsync) before the rename that
# publishes it, the staging folder flushed before it is renamed or swapped
# in, and the folder holding the new names flushed after; for a new
# folder, an existing one (swapped), one written in place (--out .) and a
# single file (norm -o).
. tests/cli/lib.sh

command -v strace >/dev/null 2>&1 || {
    _bad "strace is not installed (scripts/deps.sh test)"
    done_tests
    exit
}
cd "$T" || exit 1
T=$(pwd -P)
cat >c.json <<'EOF'
{"name": "dur", "layers": [{"synth": {"preset": "late", "tokens": 64, "dim": 32, "seed": 3},
  "label": "l"}], "jacobian": {"enabled": false},
 "figures": [{"type": "scatter", "width": 3, "height": 2.5, "dpi": 40}]}
EOF

# check.py LOG MODE CWD: the order of fsync and renames in an strace -f -y
# log of a command run in CWD
cat >check.py <<'EOF'
import os, re, sys
log, mode, cwd = sys.argv[1], sys.argv[2], sys.argv[3]
def full(p):
    return os.path.normpath(os.path.join(cwd, p))
synced, order, errors = set(), [], []
for line in open(log):
    m = re.search(r'\b(fsync|fdatasync)\((\d+)<([^>]*)>\)\s*= 0', line)
    if m:
        synced.add(m.group(3)); order.append(("sync", m.group(3))); continue
    m = re.search(r'\b(rename|renameat2?)\((?:AT_FDCWD(?:<[^>]*>)?, )?"([^"]*)", (?:AT_FDCWD(?:<[^>]*>)?, )?"([^"]*)"(, (\w+))?\)\s*= 0', line)
    if m:
        order.append(("rename", full(m.group(2)), full(m.group(3)), m.group(5) or ""))
renames = [o for o in order if o[0] == "rename"]
def synced_before(path, k):
    return any(o[0] == "sync" and o[1] == path for o in order[:k])
def synced_after(path, k):
    return any(o[0] == "sync" and o[1] == path for o in order[k + 1:])
if mode in ("new", "swap"):
    flag = "RENAME_NOREPLACE" if mode == "new" else "RENAME_EXCHANGE"
    ks = [k for k, o in enumerate(order) if o[0] == "rename" and o[3] == flag]
    if len(ks) != 1:
        sys.exit("expected one rename with %s, found %d: %s" % (flag, len(ks), renames))
    k = ks[0]
    stage, target = order[k][1], order[k][2]
    files = sorted(p for p in synced if p.startswith(stage + "/"))
    if len(files) < 4:
        sys.exit("only %d files of the staging folder flushed: %s" % (len(files), files))
    late = [p for p in files if not synced_before(p, k)]
    if late:
        sys.exit("flushed after the swap: %s" % late)
    if not synced_before(stage, k):
        sys.exit("staging folder %s not flushed before the swap" % stage)
    parent = target.rsplit("/", 1)[0]
    if not synced_after(parent, k):
        sys.exit("parent %s not flushed after the swap" % parent)
else:  # in place or one file: each temporary flushed before its rename, the folder after the last
    ks = [k for k, o in enumerate(order) if o[0] == "rename" and ".tmp." in o[1]]
    if not ks:
        sys.exit("no temporary renamed: %s" % renames)
    for k in ks:
        if not synced_before(order[k][1], k):
            sys.exit("%s renamed before it was flushed" % order[k][1])
    folder = order[ks[-1]][2].rsplit("/", 1)[0]
    if not any(o[0] == "sync" and o[1] == folder for o in order[ks[-1] + 1:]):
        sys.exit("the folder of %s not flushed after the renames" % order[ks[-1]][2])
print("ok", mode, len(ks) if mode not in ("new", "swap") else len(files))
EOF

trace() { # $1 mode, then the command
    mode=$1
    shift
    # (LeakSanitizer cannot run under a tracer: leaks are checked elsewhere)
    run env ASAN_OPTIONS=detect_leaks=0 strace -f -y -qq -o "$T/$mode.log" \
        -e trace=fsync,fdatasync,rename,renameat,renameat2 "$@"
    expect_status 0
    run /usr/bin/python3 "$T/check.py" "$T/$mode.log" "$mode" "$(pwd -P)"
    if [ "$_status" -eq 0 ]; then _ok; else _bad "$mode: $(cat "$T/.out" "$T/.err")"; fi
}
trace new "$NC" run c.json --out D --quiet
trace swap "$NC" run c.json --out D --quiet
mkdir -p P
(cd P && trace inplace "$NC" run ../c.json --out . --quiet)
"$NC" synth -o x.npy --preset late --tokens 64 --dim 32 >/dev/null 2>&1
trace single "$NC" norm x.npy -o y.npy

cd /
done_tests
