#!/bin/sh
# The whole test suite: unit tests, command-line tests, NumPy cross-checks
# and the fuzz corpus replayed through the plain build. Every part prints
# "<name>: N passed, N failed[, N skipped (needs PACKAGE, ...)]"; this
# script adds them up and ends with one summary line. Exit status 0 only if
# nothing failed.
#
#   BUILD=build tests/run.sh                      (what `make test` runs)
#   BUILD=build tests/run.sh cli                  only parts whose name contains "cli"
#   BUILD=build tests/run.sh --kinds unit,cli,fuzz   (what `make check` runs)
#
# Optional dependencies (python3-numpy, -scipy, -torch, -pil, chromium, GNU
# parallel, groff): a check that needs one that is missing is skipped and
# named ("skipped: needs python3-torch"), and so is a part that stops on a
# missing Python module; with NC_TEST_REQUIRE_ALL=1 (`make test`, which
# installs them all first) a missing one is a failure, so nothing CI runs
# is skipped silently.
set -u
BUILD=${BUILD:-build}
export BUILD
# sanitizer builds: fail on the first error, and keep stderr to the
# messages the tests compare (no list of the fontconfig leak suppression)
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-print_suppressions=0}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
kinds=unit,cli,ref,fuzz
if [ "${1:-}" = "--kinds" ]; then
    kinds=${2:-}
    shift 2
fi
filter=${1:-}
require_all=${NC_TEST_REQUIRE_ALL:-0}

passed=0
failed=0
skipped=0
parts=0
broken=""
needs="" # "package:part" words
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The Debian package of a Python module (tests/ref and the Python lines of
# tests/cli use Debian's /usr/bin/python3 and its packages).
package_of() {
    case "$1" in
    PIL) echo python3-pil ;;
    *) echo "python3-$1" ;;
    esac
}

run_part() {
    name=$1
    shift
    case "$name" in *"$filter"*) ;; *) return ;; esac
    parts=$((parts + 1))
    "$@" >"$log" 2>&1
    st=$?
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(printf '%s\n' "$line" | sed -n 's/.* \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\1/p')
    f=$(printf '%s\n' "$line" | sed -n 's/.* \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\2/p')
    s=$(printf '%s\n' "$line" | sed -n 's/.* failed, \([0-9][0-9]*\) skipped.*/\1/p')
    why=$(printf '%s\n' "$line" | sed -n 's/.* skipped (needs \(.*\))$/\1/p' | tr -d ',')
    [ -n "$p" ] || p=0
    [ -n "$f" ] || f=0
    [ -n "$s" ] || s=0
    # a part that stopped on a missing Python module is skipped, named
    mod=$(sed -n "s/.*ModuleNotFoundError: No module named '\([A-Za-z0-9_]*\).*/\1/p" "$log" | head -n 1)
    if [ "$st" -ne 0 ] && [ -n "$mod" ] && [ "$require_all" != 1 ]; then
        s=$((s + 1))
        why="$why $(package_of "$mod")"
        st=0
    elif [ -n "$mod" ] && [ "$st" -ne 0 ]; then
        echo "FAIL: $name needs $(package_of "$mod"), which is not installed" \
            "(make test installs it first: scripts/deps.sh test)" >>"$log"
    fi
    if [ "$st" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1 # crashed or failed without saying how many
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    for w in $why; do
        needs="$needs $w:$name"
    done
    if [ "$f" -ne 0 ]; then
        broken="$broken $name"
        echo "---- $name (exit $st) ----"
        cat "$log"
    fi
    if [ "$s" -ne 0 ]; then
        printf '%-34s %5d passed, %d failed, %d skipped (needs %s)\n' "$name" "$p" "$f" "$s" \
            "$(echo $why | sed 's/ /, /g')"
    else
        printf '%-34s %5d passed, %d failed\n' "$name" "$p" "$f"
    fi
}

has_kind() {
    case ",$kinds," in *",$1,"*) return 0 ;; *) return 1 ;; esac
}

if has_kind unit; then
    for t in "$BUILD"/tests/test_*; do
        [ -x "$t" ] || continue
        run_part "unit/$(basename "$t")" "$t"
    done
fi
if has_kind cli; then
    for t in tests/cli/test_*.sh; do
        [ -f "$t" ] || continue
        run_part "cli/$(basename "$t" .sh)" sh "$t"
    done
fi
if has_kind ref; then
    for t in tests/ref/test_*.py; do
        [ -f "$t" ] || continue
        run_part "ref/$(basename "$t" .py)" /usr/bin/python3 "$t"
    done
fi
if has_kind fuzz; then
    for r in "$BUILD"/tests/replay_fuzz_*; do
        [ -x "$r" ] || continue
        target=${r##*/replay_fuzz_}
        run_part "fuzz/$target" "$r" "tests/fuzz/corpus/$target"
    done
fi

echo
if [ "$failed" -ne 0 ]; then
    echo "failed parts:$broken"
fi
# one line per missing package, with the parts that skipped checks for it
for pkg in $(for w in $needs; do echo "${w%%:*}"; done | sort -u); do
    echo "skipped: needs $pkg ($(for w in $needs; do [ "${w%%:*}" = "$pkg" ] && echo "${w#*:}"; done |
        sort -u | tr '\n' ' ' | sed 's/ $//; s/ /, /g'))"
done
if [ "$skipped" -ne 0 ]; then
    echo "normcmp tests ($parts parts): $passed passed, $failed failed, $skipped skipped"
else
    echo "normcmp tests ($parts parts): $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ "$parts" -gt 0 ]
