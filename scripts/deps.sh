#!/bin/sh
# Install the Debian packages normcmp needs, only those that are missing.
#
#   scripts/deps.sh build   compiler, pkg-config and the C libraries (libpng,
#                           cJSON, cairo) plus the DejaVu font
#   scripts/deps.sh check   build + python3 (the interpreter and its standard
#                           library: the checks `make check` runs)
#   scripts/deps.sh model   check + PyTorch and NumPy: the dump script and the
#                           swap test (make demo-model)
#   scripts/deps.sh test    check + NumPy/SciPy for the independent references,
#                           PyTorch and Pillow for the activation dump script,
#                           GNU parallel (the sharded-run test), chromium
#                           (the browser test of index.html), groff (the man
#                           page check), strace (the durability test)
#   scripts/deps.sh fuzz    test + clang and its sanitizer/fuzzer runtime
#   scripts/deps.sh bench   test + OpenBLAS (serial build: the benchmark's GEMM
#                           rate) + Matplotlib (the reference pipeline) +
#                           hyperfine
#
# Runs apt-get (as root, or through sudo when available), quietly: one line
# says what it installs; apt's output goes to a log shown only on failure.
# Safe to run again: a group whose packages are all installed does nothing.
# NC_DEPS_INSTALL=0 installs nothing: it names what is missing and fails
# (make check, which needs no root).
#
# apt waits for its locks instead of failing at once (a fresh cloud machine
# runs unattended-upgrades at boot): the install through apt's own
# DPkg::Lock::Timeout, the update of the package lists (whose lock that
# option does not cover) by trying again every 2 s; both up to
# NC_APT_LOCK_WAIT seconds (default 600), saying once that they wait.
set -eu

group=${1:-build}
build="build-essential pkg-config libpng-dev libcjson-dev libcairo2-dev fonts-dejavu-core"
check="$build python3"
# one package (or a few related ones) per line, so additions merge cleanly
test="$check python3-numpy python3-scipy python3-torch python3-pil
parallel
chromium
groff-base
strace"
case "$group" in
build) pkgs=$build ;;
check) pkgs=$check ;;
model) pkgs="$check python3-numpy python3-torch" ;;
test) pkgs=$test ;;
fuzz) pkgs="$test clang libclang-rt-14-dev" ;;
bench) pkgs="$test libopenblas-serial-dev python3-matplotlib hyperfine" ;;
*) echo "deps.sh: unknown group '$group' (expected build, check, model, test, fuzz or bench)" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "${NC_DEPS_INSTALL:-1}" = 0 ]; then
    echo "deps.sh: missing:$missing (install them with scripts/deps.sh $group, as root or with sudo)" >&2
    exit 1
fi
echo "deps.sh: installing:$missing" >&2
sudo=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "deps.sh: need root (or sudo) to install:$missing" >&2; exit 1; }
    sudo=sudo
fi
wait_s=${NC_APT_LOCK_WAIT:-600}
lock="-o DPkg::Lock::Timeout=$wait_s"
# apt's and debconf's chatter goes to a log, shown only when something fails
log=$(mktemp "${TMPDIR:-/tmp}/normcmp-deps.XXXXXX")
export DEBIAN_FRONTEND=noninteractive

# apt-get update, again while another process holds an apt lock
update() {
    start=$(date +%s)
    said=""
    # shellcheck disable=SC2086
    until $sudo apt-get $lock update -qq >"$log" 2>&1; do
        grep -q 'Could not get lock' "$log" || return 1
        [ $(($(date +%s) - start)) -lt "$wait_s" ] || return 1
        if [ -z "$said" ]; then
            echo "deps.sh: waiting for apt's lock ($(grep -m1 'Could not get lock' "$log" |
                sed 's/^E: //')), up to ${wait_s} s" >&2
            said=1
        fi
        sleep 2
    done
}

# shellcheck disable=SC2086
if update && $sudo apt-get $lock install -y -qq --no-install-recommends $missing >>"$log" 2>&1; then
    rm -f "$log"
else
    cat "$log" >&2
    echo "deps.sh: apt-get failed installing:$missing (log above, kept in $log)" >&2
    exit 1
fi
