#!/bin/sh
# apt_lock.sh - scripts/deps.sh against the real apt with its locks held,
# as unattended-upgrades holds them on a freshly booted cloud machine.
# Not part of `make test` (it needs root and the network, and runs apt);
# tests/cli/test_deps.sh checks the same logic with stand-ins.
#
#   sudo tests/manual/apt_lock.sh [SECONDS]     (default 6)
#
# For SECONDS, another process holds the dpkg frontend lock
# (/var/lib/dpkg/lock-frontend) and the package lists' lock
# (/var/lib/apt/lists/lock) with fcntl, as apt and dpkg take them, while
# deps.sh is asked to install one package that is in fact installed (a
# stand-in dpkg-query reports it missing), so the real apt-get update and
# apt-get install run, and must wait. Prints how long deps.sh took and its
# exit status: it passes when deps.sh succeeds after the locks are released.
set -eu
hold=${1:-6}
pkg=groff-base
[ "$(id -u)" = 0 ] || { echo "apt_lock.sh: run as root" >&2; exit 2; }
dpkg-query -W -f='${Status}' "$pkg" | grep -q 'install ok installed' ||
    { echo "apt_lock.sh: $pkg should be installed already" >&2; exit 2; }
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/dpkg-query" <<SH
#!/bin/sh
for a; do p=\$a; done
[ "\$p" = "$pkg" ] && exit 1
exec /usr/bin/dpkg-query "\$@"
SH
chmod +x "$tmp/dpkg-query"
/usr/bin/python3 - "$hold" "$tmp/held" <<'PY' &
import fcntl, sys, time
files = [open(p, "a") for p in ("/var/lib/dpkg/lock-frontend", "/var/lib/apt/lists/lock")]
for f in files:
    fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(float(sys.argv[1]))
PY
holder=$!
while [ ! -e "$tmp/held" ]; do sleep 0.1; done
echo "apt_lock.sh: process $holder holds both apt locks for $hold s; running scripts/deps.sh test"
start=$(date +%s.%N)
status=0
PATH="$tmp:$PATH" sh "$top/scripts/deps.sh" test || status=$?
end=$(date +%s.%N)
wait "$holder"
took=$(echo "$start $end" | awk '{printf "%.1f", $2 - $1}')
echo "apt_lock.sh: deps.sh exited $status after $took s (the locks were held $hold s)"
[ "$status" = 0 ] && awk -v t="$took" -v h="$hold" 'BEGIN { exit !(t + 1 >= h) }'
