# lib.sh - helpers for the command-line tests (sourced by tests/cli/test_*.sh).
#
#   run CMD...                 runs CMD, keeping stdout, stderr and the exit status
#   expect_status N            the last run exited with N
#   expect_err TEXT            its stderr is exactly one line equal to TEXT
#   expect_err_has TEXT        its stderr contains TEXT
#   expect_out_has TEXT        its stdout contains TEXT
#   expect_file PATH / expect_no_file PATH
#   check DESCRIPTION CMD...   CMD succeeds
#   skip DESCRIPTION PACKAGE   a check that needs an optional Debian PACKAGE
#                              which is missing: counted as skipped and named
#                              ("skipped: needs PACKAGE") under `make check`;
#                              a failure under `make test` (NC_TEST_REQUIRE_ALL=1,
#                              which installs everything first)
#   have_py MODULE...          /usr/bin/python3 can import every MODULE
#   done_tests                 prints "<test>: N passed, N failed[, N skipped
#                              (needs PACKAGE, ...)]", exits 0/1
#
# NC is the binary; T a fresh scratch folder removed at exit.
set -u
BUILD=${BUILD:-build}
NC="$PWD/$BUILD/normcmp"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
_pass=0
_fail=0
_skip=0
_needs=""
_name=$(basename "$0" .sh)

_ok() { _pass=$((_pass + 1)); }
_bad() {
    _fail=$((_fail + 1))
    echo "FAIL: $*" >&2
    echo "  command: $_cmd" >&2
    echo "  status:  $_status" >&2
    echo "  stderr:  $(head -c 600 "$T/.err")" >&2
}

run() {
    _cmd="$*"
    "$@" >"$T/.out" 2>"$T/.err"
    _status=$?
}

expect_status() {
    if [ "$_status" -eq "$1" ]; then _ok; else _bad "expected exit status $1"; fi
}

expect_err() {
    if [ "$(cat "$T/.err")" = "$1" ] && [ "$(wc -l <"$T/.err")" -eq 1 ]; then
        _ok
    else
        _bad "expected stderr to be exactly: $1"
    fi
}

expect_err_has() {
    if grep -qF -- "$1" "$T/.err"; then _ok; else _bad "expected stderr to contain: $1"; fi
}

expect_out_has() {
    if grep -qF -- "$1" "$T/.out"; then _ok; else _bad "expected stdout to contain: $1"; fi
}

expect_file() {
    if [ -f "$1" ]; then _ok; else _bad "expected file $1"; fi
}

expect_no_file() {
    if [ ! -e "$1" ]; then _ok; else _bad "expected no file $1"; fi
}

check() {
    _d=$1
    shift
    _cmd="$*"
    if "$@" >"$T/.out" 2>"$T/.err"; then _status=0; _ok; else _status=$?; _bad "$_d"; fi
}

skip() {
    if [ "${NC_TEST_REQUIRE_ALL:-0}" = 1 ]; then
        _fail=$((_fail + 1))
        echo "FAIL: $1: needs $2, which is not installed (make test installs it first:" \
            "scripts/deps.sh test)" >&2
        return
    fi
    _skip=$((_skip + 1))
    echo "skipped: $1 (needs $2)"
    case " $_needs " in *" $2 "*) ;; *) _needs="${_needs:+$_needs }$2" ;; esac
}

have_py() {
    for _m in "$@"; do
        # a real package, not a stray folder of the name (a namespace package)
        /usr/bin/python3 -c "import sys, $_m; sys.exit($_m.__file__ is None)" >/dev/null 2>&1 ||
            return 1
    done
}

done_tests() {
    if [ "$_skip" -gt 0 ]; then
        echo "$_name: $_pass passed, $_fail failed, $_skip skipped (needs $(echo "$_needs" | sed 's/ /, /g'))"
    else
        echo "$_name: $_pass passed, $_fail failed"
    fi
    [ "$_fail" -eq 0 ]
}
