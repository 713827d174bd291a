#!/bin/sh
# Install the Debian packages normcmp needs, only those that are missing.
#
#   scripts/deps.sh build   compiler, pkg-config and the C libraries (libpng,
#                           cJSON, cairo) plus the DejaVu font
#   scripts/deps.sh test    build + NumPy/SciPy for the independent references,
#                           PyTorch and Pillow for the activation dump script,
#                           GNU parallel (the sharded-run test), chromium
#                           (the browser test of index.html), groff (the man
#                           page check)
#   scripts/deps.sh fuzz    test + clang and its sanitizer/fuzzer runtime
#   scripts/deps.sh bench   test + OpenBLAS (serial build: the benchmark's GEMM
#                           rate) + Matplotlib (the reference pipeline) +
#                           hyperfine
#
# Runs apt-get (as root, or through sudo when available), quietly: one line
# says what it installs; apt's output goes to a log shown only on failure.
# Safe to run again: a group whose packages are all installed does nothing.
set -eu

group=${1:-build}
build="build-essential pkg-config libpng-dev libcjson-dev libcairo2-dev fonts-dejavu-core"
# one package (or a few related ones) per line, so additions merge cleanly
test="$build python3 python3-numpy python3-scipy python3-torch python3-pil
parallel
chromium
groff-base"
case "$group" in
build) pkgs=$build ;;
test) pkgs=$test ;;
fuzz) pkgs="$test clang libclang-rt-14-dev" ;;
bench) pkgs="$test libopenblas-serial-dev python3-matplotlib hyperfine" ;;
*) echo "deps.sh: unknown group '$group' (expected build, test, fuzz or bench)" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "deps.sh: installing:$missing" >&2
sudo=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "deps.sh: need root (or sudo) to install:$missing" >&2; exit 1; }
    sudo=sudo
fi
# apt's and debconf's chatter goes to a log, shown only when something fails
log=$(mktemp "${TMPDIR:-/tmp}/normcmp-deps.XXXXXX")
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if $sudo apt-get update -qq >"$log" 2>&1 &&
    $sudo apt-get install -y -qq --no-install-recommends $missing >>"$log" 2>&1; then
    rm -f "$log"
else
    cat "$log" >&2
    echo "deps.sh: apt-get failed installing:$missing (log above, kept in $log)" >&2
    exit 1
fi
