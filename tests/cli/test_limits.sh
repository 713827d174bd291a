# test_limits.sh - kills and resource limits on the whole-model paths:
# `run` and `merge` killed (SIGKILL) at random moments, and run under a
# file-size limit (ulimit -f), an address-space limit (ulimit -v) and few
# file descriptors (ulimit -n). Whatever happens, the output folder holds
# one complete set, the old one or the new one; a run that fails exits 1 or
# 2 with one line; and after the next run no lock file or staging folder is
# left. (docs/outputs.md; test_atomic.sh has the finer cases.)
. tests/cli/lib.sh

# fewer cases under the sanitizers (each process starts ten times slower)
kills=10 fsizes="4 40 200 2000" nfiles="4 6 8 10 12 16 24"
case "$BUILD" in *san*) kills=5 fsizes="4 200" nfiles="4 6 16" ;; esac

cd "$T" || exit 1
# two configs, each with its own figure names, so a folder's set tells
# which run made it; their shards (2 each) for merge
/usr/bin/python3 - <<'EOF'
import json
for tag, seed in (("a", 3), ("b", 4)):
    cfg = {"name": "set_" + tag, "fits": ["linear", "dyt", "dyisru"],
           "layers": [{"synth": {"preset": p, "tokens": 64, "dim": 16, "seed": seed + k},
                       "label": "%s%d" % (tag, k)} for k, p in enumerate(["early", "middle", "late"])],
           "jacobian": {"enabled": False},
           "figures": [{"type": "scatter", "name": "%s_sc" % tag, "width": 2.5, "height": 2, "dpi": 40},
                       {"type": "alpha-std", "name": "%s_as" % tag, "width": 2.5, "height": 2, "dpi": 40}]}
    json.dump(cfg, open(tag + ".json", "w"))
EOF
for tag in a b; do
    "$NC" run "$tag.json" --out "ref_$tag" --quiet >/dev/null 2>&1 || _bad "reference run $tag"
    for k in 1 2; do
        "$NC" run "$tag.json" --shard "$k/2" --out "sh_$tag$k" --quiet >/dev/null 2>&1 || _bad "shard $k of $tag"
    done
    "$NC" merge "mref_$tag" "sh_${tag}1" "sh_${tag}2" --quiet >/dev/null 2>&1 || _bad "reference merge $tag"
done

# check.py DIR REF_A REF_B: DIR holds exactly the complete set of one of
# the two reference folders
cat >check.py <<'EOF'
import json, os, sys
d, refs = sys.argv[1], sys.argv[2:]
names = set(os.listdir(d))
match = [r for r in refs if set(os.listdir(r)) == names]
if not match:
    print("not one set: %s" % sorted(names)[:8]); sys.exit(1)
rep = json.load(open(os.path.join(d, "report.json")))
if set(rep["outputs"]) | {"report.json"} != names:
    print("report.json lists other outputs"); sys.exit(1)
for n in names:
    b = open(os.path.join(d, n), "rb").read()
    if n.endswith(".png") and b[-8:-4] != b"IEND":
        print("incomplete figure " + n); sys.exit(1)
    if n.endswith(".html") and not b.rstrip().endswith(b"</html>"):
        print("incomplete index.html"); sys.exit(1)
    if n == "config.json" and b != open(os.path.join(match[0], n), "rb").read():
        print("config.json of another set"); sys.exit(1)
EOF
check_set() { # $1 folder, $2 what happened, $3 $4 the two reference folders
    _cmd="check of $1 after $2"
    if /usr/bin/python3 check.py "$1" "$3" "$4" >"$T/.out" 2>&1; then _ok; else _bad "$(cat "$T/.out")"; fi
}
left() { find "$T" -maxdepth 1 \( -name '.*.tmp.*' -o -name '.*.lock' \) | wc -l; }
# the command that writes set $2 ($1: run or merge) into $3
cmd_of() {
    if [ "$1" = run ]; then
        echo "'$NC' run $2.json --out $3 --quiet"
    else
        echo "'$NC' merge $3 sh_${2}1 sh_${2}2 --quiet"
    fi
}

"$NC" run a.json --out D --quiet >/dev/null 2>&1
"$NC" merge M sh_a1 sh_a2 --quiet >/dev/null 2>&1

# --- SIGKILL at random moments (the commit slowed by the test hook on
# every second try, so kills land in it too)
for what in run merge; do
    dir=D ra=ref_a rb=ref_b
    [ "$what" = merge ] && dir=M ra=mref_a rb=mref_b
    t0=$(date +%s%N)
    NORMCMP_TEST_STEP_MS=3 sh -c "$(cmd_of "$what" b "$dir")" >/dev/null 2>&1
    span=$((($(date +%s%N) - t0) / 1000000 + 30))
    landed=0
    for i in $(seq 1 "$kills"); do
        tag=a
        [ $((i % 2)) -eq 0 ] && tag=b
        slow=$((i % 4 < 2 ? 3 : 0))
        r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
        delay=$(awk -v r="$r" -v s="$span" 'BEGIN { printf "%.3f", (r % s) / 1000 }')
        NORMCMP_TEST_STEP_MS=$slow sh -c "exec $(cmd_of "$what" "$tag" "$dir")" >/dev/null 2>&1 &
        pid=$!
        sleep "$delay"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        [ $? -eq 137 ] && landed=$((landed + 1))
        check_set "$dir" "SIGKILL of $what $tag after ${delay}s" "$ra" "$rb"
    done
    _cmd="SIGKILLs of $what that landed"
    if [ "$landed" -gt 0 ]; then _ok; else _bad "no kill landed during a $what (span ${span} ms)"; fi
    # the next run removes what the killed ones left
    run sh -c "$(cmd_of "$what" a "$dir")"
    expect_status 0
    check_set "$dir" "the $what after the kills" "$ra" "$rb"
    _cmd="leftovers after the $what after the kills"
    if [ "$(left)" -eq 0 ]; then _ok; else _bad "left: $(ls -a "$T")"; fi
done

# --- limits: ulimit -f (512-byte blocks in sh), -v (KB), -n (descriptors)
limit_case() { # $1 run|merge, $2 ulimit option, $3 value, $4 set tag
    what=$1
    dir=D
    [ "$what" = merge ] && dir=M
    ra=ref_a rb=ref_b
    [ "$what" = merge ] && ra=mref_a rb=mref_b
    _cmd="$what under ulimit $2 $3"
    sh -c "ulimit $2 $3; exec $(cmd_of "$what" "$4" "$dir")" >"$T/.out" 2>"$T/.err"
    _status=$?
    case $_status in
    0) _ok ;;
    1 | 2)
        if [ "$(wc -l <"$T/.err")" -eq 1 ] && grep -q '^normcmp: ' "$T/.err"; then _ok; else _bad "expected one line on stderr"; fi
        ;;
    *) _bad "expected exit 0, 1 or 2" ;;
    esac
    check_set "$dir" "$what under ulimit $2 $3" "$ra" "$rb"
    _cmd="$what under ulimit $2 $3: leftovers"
    if [ "$(left)" -eq 0 ]; then _ok; else _bad "left: $(find "$T" -maxdepth 1 -name '.*.tmp.*' -o -maxdepth 1 -name '.*.lock')"; fi
}
tag=b
for v in $fsizes; do
    limit_case run -f "$v" "$tag"
    limit_case merge -f "$v" "$tag"
    tag=$([ "$tag" = a ] && echo b || echo a)
done
case "$BUILD" in
*san*) echo "test_limits: sanitizer build: address-space limits skipped" >&2 ;;
*)
    # (below about 60 MB the dynamic loader cannot map the libraries)
    for v in 60000 70000 90000 200000; do
        limit_case run -v "$v" "$tag"
        limit_case merge -v "$v" "$tag"
        tag=$([ "$tag" = a ] && echo b || echo a)
    done
    ;;
esac
for v in $nfiles; do
    limit_case run -n "$v" "$tag"
    limit_case merge -n "$v" "$tag"
    tag=$([ "$tag" = a ] && echo b || echo a)
done

# --- the next runs leave nothing behind
run sh -c "$(cmd_of run a D)"
expect_status 0
run sh -c "$(cmd_of merge a M)"
expect_status 0
check_set D "the last run" ref_a ref_b
check_set M "the last merge" mref_a mref_b
_cmd="leftovers after the last runs"
if [ "$(left)" -eq 0 ]; then _ok; else _bad "left: $(ls -a "$T")"; fi

cd /
done_tests
