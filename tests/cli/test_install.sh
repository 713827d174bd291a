# test_install.sh - `make install DESTDIR=...` puts the binary, normcmp-dump,
# the man page and the example loaders in place; the man page renders
# without a groff warning; `make uninstall` removes all of it.
. tests/cli/lib.sh

san=""
[ "$BUILD" = build/san ] && san=SANITIZE=1
D="$T/root"
check "make install" make -s --no-print-directory install DESTDIR="$D" PREFIX=/usr $san
expect_file "$D/usr/bin/normcmp"
expect_file "$D/usr/bin/normcmp-dump"
expect_file "$D/usr/share/man/man1/normcmp.1"
expect_file "$D/usr/share/normcmp/example_model.py"
check "installed normcmp runs" "$D/usr/bin/normcmp" --version
expect_out_has "normcmp"
check "normcmp-dump is executable" test -x "$D/usr/bin/normcmp-dump"
check "normcmp-dump is valid Python" /usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$D/usr/bin/normcmp-dump"

# the page parses without warnings and renders its sections
if command -v groff >/dev/null 2>&1 && command -v man >/dev/null 2>&1 &&
    command -v col >/dev/null 2>&1; then
    run groff -man -Tutf8 -ww "$D/usr/share/man/man1/normcmp.1"
    expect_status 0
    check "groff: no warnings" test ! -s "$T/.err"
    run sh -c "MANWIDTH=80 MANPAGER=cat man -l '$D/usr/share/man/man1/normcmp.1' 2>&1 | col -bx"
    for s in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" FILES EXAMPLES; do
        expect_out_has "$s"
    done
    expect_out_has "normcmp help [COMMAND]"
    cp "$T/.out" "$T/man.txt"
    # every command of `normcmp --help` has its entry in the page
    "$NC" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' >"$T/cmds"
    check "commands listed in --help" test -s "$T/cmds"
    while read -r c; do
        grep -q "^       $c " "$T/man.txt" || grep -q "^       $c$" "$T/man.txt" ||
            { _fail=$((_fail + 1)); echo "FAIL: man page has no entry for '$c'" >&2; }
    done <"$T/cmds"
else
    skip "the man page rendered by groff and man" groff-base
fi

check "make uninstall" make -s --no-print-directory uninstall DESTDIR="$D" PREFIX=/usr
check "nothing left but empty folders" test -z "$(find "$D" -type f)"
done_tests
