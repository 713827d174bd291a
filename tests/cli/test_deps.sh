# test_deps.sh - scripts/deps.sh installs only what is missing, waits for
# apt's locks instead of failing (a fresh cloud machine runs
# unattended-upgrades at boot), and under NC_DEPS_INSTALL=0 (make check)
# installs nothing and says what is missing. apt-get, dpkg-query and sudo
# are stand-ins on PATH that log their arguments, so this runs without
# root or network; tests/manual/apt_lock.sh does the same with the real
# apt and a real held lock.
. tests/cli/lib.sh

mkdir -p "$T/bin"
# dpkg-query: everything installed but the packages in $FAKE_MISSING
cat >"$T/bin/dpkg-query" <<'SH'
#!/bin/sh
for a; do p=$a; done
case " $FAKE_MISSING " in *" $p "*) exit 1 ;; esac
printf 'install ok installed'
SH
# apt-get: logs its arguments; "update" fails on the lists lock while
# $T/locked holds a number above 0 (counting down)
cat >"$T/bin/apt-get" <<SH
#!/bin/sh
echo "\$*" >>"$T/apt.log"
case " \$* " in *" update "*)
    n=\$(cat "$T/locked" 2>/dev/null || echo 0)
    if [ "\$n" -gt 0 ]; then
        echo \$((n - 1)) >"$T/locked"
        echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (unattended-upgr)"
        echo "E: Unable to lock directory /var/lib/apt/lists/"
        exit 100
    fi ;;
esac
exit 0
SH
printf '#!/bin/sh\nexec "$@"\n' >"$T/bin/sudo"
chmod +x "$T/bin/dpkg-query" "$T/bin/apt-get" "$T/bin/sudo"
deps() { PATH="$T/bin:$PATH" FAKE_MISSING="$1" sh scripts/deps.sh test; }

# nothing missing: apt is not called
run deps ""
expect_status 0
expect_no_file "$T/apt.log"

# one package missing while another process holds the lists lock once:
# deps.sh says it waits, tries again, then installs; both apt-get calls
# carry the lock timeout
echo 1 >"$T/locked"
run deps "groff-base"
expect_status 0
expect_err_has "deps.sh: installing: groff-base"
expect_err_has "deps.sh: waiting for apt's lock (Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (unattended-upgr)), up to 600 s"
run cat "$T/apt.log"
expect_out_has "-o DPkg::Lock::Timeout=600 update -qq"
expect_out_has "-o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends groff-base"
check "update tried twice, install once: $(tr '\n' '|' <"$T/apt.log")" \
    test "$(grep -c ' update ' "$T/apt.log")-$(grep -c ' install ' "$T/apt.log")" = "2-1"

# a lock held for longer than NC_APT_LOCK_WAIT: apt's own message, exit 1
rm -f "$T/apt.log"
echo 1000 >"$T/locked"
run env NC_APT_LOCK_WAIT=1 PATH="$T/bin:$PATH" FAKE_MISSING=parallel sh scripts/deps.sh test
expect_status 1
expect_err_has "E: Could not get lock /var/lib/apt/lists/lock"
expect_err_has "deps.sh: apt-get failed installing: parallel"
run grep -c ' install ' "$T/apt.log"
expect_out_has "0"

# make check's mode: nothing installed, what is missing named
rm -f "$T/apt.log"
run env NC_DEPS_INSTALL=0 PATH="$T/bin:$PATH" FAKE_MISSING=python3 sh scripts/deps.sh check
expect_status 1
expect_err "deps.sh: missing: python3 (install them with scripts/deps.sh check, as root or with sudo)"
expect_no_file "$T/apt.log"
done_tests
