# test_atomic.sh - an output folder holds exactly one complete set of a
# run's outputs, whatever happens: a later run with fewer outputs, two runs
# on one folder at once, SIGKILL at random moments (also with the commit
# slowed down by the test hook NORMCMP_TEST_STEP_MS), SIGTERM with more
# outputs than any fixed table would hold; and what killed runs leave is
# removed by the next run. (docs/errors.md, docs/outputs.md, src/util/outset.c.)
. tests/cli/lib.sh

V="$PWD/data/vit4mnist"
cd "$T" || exit 1
/usr/bin/python3 - <<'EOF'
import json
for tag, n in (("a", 12), ("b", 80)):
    cfg = {"name": "set_" + tag,
           "layers": [{"synth": {"preset": "late", "tokens": 64, "dim": 32, "seed": 3},
                       "label": "l"}],
           "jacobian": {"enabled": False},
           "figures": [{"type": "scatter", "name": "%s%02d" % (tag, k), "width": 3,
                        "height": 2.5, "dpi": 40} for k in range(n)]}
    json.dump(cfg, open(tag + ".json", "w"))
EOF
cat >check.py <<'EOF'
# check.py DIR: DIR holds exactly the complete set of a.json's run or of b.json's
import json, os, sys
d = sys.argv[1]
names = set(os.listdir(d))
sets = {}
for tag, n in (("a", 12), ("b", 80)):
    sets[tag] = ({"report.json", "config.json", "index.html", "dropin_dyt.safetensors",
                  "dropin_dyt_alpha0.safetensors", "dropin_dyisru.safetensors"} |
                 {"%s%02d.png" % (tag, k) for k in range(n)})
tag = [t for t in sets if sets[t] == names]
if not tag:
    extra = sorted(names - sets["a"] - sets["b"])[:5]
    print("not one set: %d files, %d of a, %d of b, others %s" % (
        len(names), len(names & sets["a"]), len(names & sets["b"]), extra))
    sys.exit(1)
tag = tag[0]
rep = json.load(open(os.path.join(d, "report.json")))
if rep["config"]["name"] != "set_" + tag:
    print("report.json of another set"); sys.exit(1)
if set(rep["outputs"]) | {"report.json"} != names:
    print("report.json lists other outputs"); sys.exit(1)
if open(os.path.join(d, "config.json"), "rb").read() != open(tag + ".json", "rb").read():
    print("config.json of another set"); sys.exit(1)
for n in names:
    if n.endswith(".html") and not open(os.path.join(d, n), "rb").read().rstrip().endswith(b"</html>"):
        print("incomplete index.html"); sys.exit(1)
    if n.endswith(".png"):
        b = open(os.path.join(d, n), "rb").read()
        if b[-8:-4] != b"IEND":
            print("incomplete figure " + n); sys.exit(1)
print("set " + tag)
EOF
check_set() {
    _cmd="check of $1 after $2"
    if /usr/bin/python3 check.py "$1" >"$T/.out" 2>"$T/.err"; then _ok; else _bad "$(cat "$T/.out")"; fi
}
stale() { ls -a "$T" | grep -c -e '^\.D\.tmp\.' -e '^\.D\.lock$'; }

# --- a later run with fewer outputs leaves only its own set
run "$NC" run a.json --out D --quiet
expect_status 0
run "$NC" run b.json --out D --quiet
expect_status 0
check_set D "a then b"
run "$NC" run a.json --out D --quiet
expect_status 0
check_set D "a, b, then a again"
# files that are not outputs stay; the lock and staging folder go
echo notes >D/notes.txt
run "$NC" run b.json --out D --quiet
if [ "$(cat D/notes.txt 2>/dev/null)" = notes ]; then _ok; else _bad "notes.txt lost"; fi
rm -f D/notes.txt
check_set D "b with a file of the user's"
if [ "$(stale)" -eq 0 ]; then _ok; else _bad "lock or staging folder left: $(ls -a)"; fi

# --- two runs on one folder: the second fails at once, naming the first
NORMCMP_TEST_STEP_MS=20 "$NC" run a.json --out D --quiet >/dev/null 2>first.err &
first=$!
for i in $(seq 1 100); do
    [ -e .D.lock ] && break
    sleep 0.05
done
run "$NC" run b.json --out D --quiet
expect_status 1
expect_err_has "D: in use by another normcmp run (process $first holds $T/.D.lock)"
wait "$first"
_status=$?
_cmd="the first of two concurrent runs"
expect_status 0
check_set D "two concurrent runs"

# --- SIGKILL at random moments: always one complete set, old or new
ms_of() { date +%s%N | cut -b1-13; }
t0=$(ms_of)
NORMCMP_TEST_STEP_MS=5 "$NC" run b.json --out D --quiet >/dev/null 2>&1
t1=$(ms_of)
span=$((t1 - t0 + 50))
killed_stale=0
for i in $(seq 1 12); do
    cfg=a.json
    [ $((i % 2)) -eq 0 ] && cfg=b.json
    slow=0
    [ $((i % 4)) -lt 2 ] && slow=5
    r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
    delay=$(awk -v r="$r" -v s="$span" 'BEGIN { printf "%.3f", (r % s) / 1000 }')
    NORMCMP_TEST_STEP_MS=$slow "$NC" run "$cfg" --out D --quiet >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    check_set D "SIGKILL after ${delay}s of $cfg (step ${slow} ms)"
    [ "$(stale)" -gt 0 ] && killed_stale=$((killed_stale + 1))
done
# what the killed runs left is removed by the next run
_cmd="kills that left a staging folder or lock"
if [ "$killed_stale" -gt 0 ]; then _ok; else _bad "no kill landed during a run (span ${span} ms)"; fi
run "$NC" run a.json --out D --quiet
expect_status 0
check_set D "the run after the kills"
_cmd="leftovers after the next run"
if [ "$(stale)" -eq 0 ]; then _ok; else _bad "left: $(ls -a)"; fi

# --- SIGTERM with more outputs than a fixed table of 64: nothing left,
# both in the staging folder and when writing in place (--out .)
for mode in staged inplace; do
    if [ "$mode" = staged ]; then
        NORMCMP_TEST_STEP_MS=15 "$NC" run b.json --out D --quiet >/dev/null 2>&1 &
    else
        (cd D && NORMCMP_TEST_STEP_MS=15 exec "$NC" run ../b.json --out . --quiet >/dev/null 2>&1) &
    fi
    pid=$!
    n=0
    for i in $(seq 1 400); do
        if [ "$mode" = staged ]; then
            n=$(find "$T" -path "$T/.D.tmp.*/*" -type f 2>/dev/null | wc -l)
        else
            n=$(find "$T/D" -name '.*.tmp.*' -type f 2>/dev/null | wc -l)
        fi
        [ "$n" -gt 70 ] && break
        sleep 0.02
    done
    kill -TERM "$pid"
    wait "$pid"
    _status=$?
    _cmd="SIGTERM of run b ($mode) with $n temporaries"
    if [ "$n" -gt 64 ]; then _ok; else _bad "only $n temporaries seen before SIGTERM"; fi
    if [ "$_status" -eq 143 ]; then _ok; else _bad "expected death by SIGTERM (143)"; fi
    left=$(find "$T" -name '.*.tmp.*' -o -name '.*.lock' | wc -l)
    if [ "$left" -eq 0 ]; then _ok; else _bad "$left temporaries or locks left: $(find "$T" -name '.*.tmp.*' | head -3)"; fi
done
# a fresh check from outside: the folder still holds one set
(cd D && "$NC" run ../a.json --out . --quiet >/dev/null 2>&1)
check_set D "runs with --out . (in place)"

# --- leftovers: the next run on the same output removes what a killed run
# recorded in its lock file (its token names its temporaries and staging
# folder), and nothing else: files and folders of the user's that are
# merely named like temporaries stay (docs/outputs.md "Leftovers")
"$NC" synth -o x.npy --preset late --tokens 64 --dim 32 >/dev/null 2>&1
"$NC" norm x.npy -o y.npy >/dev/null 2>&1
printf 'normcmp lock\npid 999999\ntoken AAAAAAAAAAAA\nend\n' >.y.npy.lock
printf 'half' >.y.npy.tmp.AAAAAAAAAAAA
printf 'mine' >.y.npy.tmp.Ab12Cd
run "$NC" norm x.npy -o y.npy
expect_status 0
expect_no_file .y.npy.tmp.AAAAAAAAAAAA
expect_no_file .y.npy.lock
if [ "$(cat .y.npy.tmp.Ab12Cd)" = mine ]; then _ok; else _bad "a file of the user's named like a temporary went"; fi
# a run's folder: its in-place temporary and its staging folder go
printf 'normcmp lock\npid 999999\ntoken BBBBBBBBBBBB\nend\n' >.D.lock
printf 'half' >D/.report.json.tmp.BBBBBBBBBBBB
mkdir .D.tmp.BBBBBBBBBBBB
printf 'half' >.D.tmp.BBBBBBBBBBBB/report.json
run "$NC" fit x.npy --out D --quiet
expect_status 0
expect_no_file D/.report.json.tmp.BBBBBBBBBBBB
expect_no_file .D.tmp.BBBBBBBBBBBB
# the user's: a folder .res.tmp.backup/ with its contents, a file
# .res.tmp.2024v1, a file res/.notes.tmp.backup; all stay
mkdir -p res .res.tmp.backup
printf 'keep' >.res.tmp.backup/data.txt
printf 'keep' >.res.tmp.2024v1
printf 'keep' >res/.notes.tmp.backup
for i in 1 2; do # the second run swaps the folder, carrying the file over
    run "$NC" fit x.npy --out res --quiet
    expect_status 0
done
for f in .res.tmp.backup/data.txt .res.tmp.2024v1 res/.notes.tmp.backup; do
    if [ "$(cat "$f" 2>/dev/null)" = keep ]; then _ok; else _bad "$f of the user's was removed"; fi
done
expect_file res/report.json
# a file of the user's where the lock would go is neither used nor removed
printf 'my notes\n' >.E.lock
run "$NC" fit x.npy --out E --quiet
expect_status 2
expect_err "normcmp: E: $T/.E.lock exists and is not a normcmp lock file (move it away or choose another output)"
if [ "$(cat .E.lock)" = "my notes" ]; then _ok; else _bad ".E.lock of the user's changed"; fi
expect_no_file E
rm .E.lock
# a lock taken by a run that has not yet written its record: the message
# names no process 0
: >.F.lock
# held until F.stop appears (at most 60 s), not for a fixed time: a slow
# (sanitizer) build on a loaded machine must still find it held
flock -n .F.lock -c 'i=0; while [ ! -e F.stop ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done' &
holder=$!
for i in $(seq 1 100); do
    flock -n -E 99 .F.lock true
    [ $? -eq 99 ] && break
    sleep 0.02
done
run "$NC" fit x.npy --out F --quiet
expect_status 1
expect_err "normcmp: F: in use by another normcmp run (it holds $T/.F.lock); wait for it to finish or choose another output"
: >F.stop
wait "$holder" 2>/dev/null

# --- a run stopped after creating --out a/b/c removes every folder it
# created (a and b too), and only those
"$NC" synth -o big.npy --preset late --tokens 2048 --dim 2048 --seed 5 >/dev/null 2>&1
mkdir keep
"$NC" fit big.npy --out keep/a/b/c --quiet >/dev/null 2>&1 &
pid=$!
for i in $(seq 1 200); do
    [ -d keep/a/b ] && break
    sleep 0.01
done
sleep 0.05
kill -TERM "$pid"
wait "$pid"
_status=$?
_cmd="SIGTERM of fit --out keep/a/b/c"
expect_status 143
expect_no_file keep/a
if [ -d keep ]; then _ok; else _bad "removed a folder it did not create"; fi

# a run into a folder that holds an earlier run says so, in one line (not
# under -q); a fresh folder gets no such line
run "$NC" fit "$V/ln00_input.npy" --out notice --no-jacobian --bootstrap 0
expect_status 0
if grep -q "earlier run" .err; then _bad "a fresh folder: $(cat .err)"; else _ok; fi
run "$NC" fit "$V/ln05_input.npy" --out notice --no-jacobian --bootstrap 0
expect_status 0
expect_err "normcmp: notice held an earlier run: its 5 outputs replaced or removed (other files stay)"
run "$NC" fit "$V/ln05_input.npy" --out notice --no-jacobian --bootstrap 0 -q
expect_status 0
if [ -s .err ]; then _bad "-q: $(cat .err)"; else _ok; fi

cd /
done_tests
