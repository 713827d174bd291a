#!/bin/sh
# The whole test suite: unit tests, command-line tests, NumPy cross-checks
# and the fuzz corpus replayed through the plain build. Every part prints
# "<name>: N passed, N failed"; this script adds them up and ends with one
# summary line. Exit status 0 only if nothing failed.
#
#   BUILD=build tests/run.sh            (what `make test` runs)
#   BUILD=build tests/run.sh cli        only parts whose name contains "cli"
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
filter=${1:-}

passed=0
failed=0
parts=0
broken=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

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
    [ -n "$p" ] || p=0
    [ -n "$f" ] || f=0
    if [ "$st" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1 # crashed or failed without saying how many
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$f" -ne 0 ]; then
        broken="$broken $name"
        echo "---- $name (exit $st) ----"
        cat "$log"
    fi
    printf '%-34s %5d passed, %d failed\n' "$name" "$p" "$f"
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run_part "unit/$(basename "$t")" "$t"
done
for t in tests/cli/test_*.sh; do
    [ -f "$t" ] || continue
    run_part "cli/$(basename "$t" .sh)" sh "$t"
done
for t in tests/ref/test_*.py; do
    [ -f "$t" ] || continue
    run_part "ref/$(basename "$t" .py)" /usr/bin/python3 "$t"
done
for r in "$BUILD"/tests/replay_fuzz_*; do
    [ -x "$r" ] || continue
    target=${r##*/replay_fuzz_}
    run_part "fuzz/$target" "$r" "tests/fuzz/corpus/$target"
done

echo
if [ "$failed" -ne 0 ]; then
    echo "failed parts:$broken"
fi
echo "normcmp tests ($parts parts): $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$parts" -gt 0 ]
