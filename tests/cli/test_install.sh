# test_install.sh - `make install DESTDIR=...` puts the binary, normcmp-dump,
# normcmp-swap, the man page, the example loaders, the shipped models and
# the Python package in place; the installed scripts show and find their
# installed helper modules and models from any folder; the installed package
# finds the installed binary; the man page renders without a groff warning;
# `make uninstall` removes all of it.
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
expect_file "$D/usr/bin/normcmp-swap"
S="$D/usr/share/normcmp"
expect_file "$S/llama2c_model.py"
expect_file "$S/models/stories260K.bin"
expect_file "$S/models/vit4mnist.ptl"
expect_file "$S/models/README.md"
P=$(ls -d "$D"/usr/lib/python3*/dist-packages 2>/dev/null | head -n 1)
expect_file "$P/normcmp/__init__.py"
expect_file "$P/normcmp/dump.py"
expect_file "$P/normcmp/_installed.py"

# the installed scripts' help shows the installed paths, run from elsewhere
cd "$T" || exit 1
run /usr/bin/python3 "$D/usr/bin/normcmp-dump" --help
expect_status 0
expect_out_has "usage: normcmp-dump "
expect_out_has "    normcmp-dump --model $S/llama2c_model.py:load"
expect_out_has "--checkpoint $S/models/stories260K.bin"
expect_out_has "$S) builds the model"
run /usr/bin/python3 "$D/usr/bin/normcmp-swap" --help
expect_status 0
expect_out_has "usage: normcmp-swap "
expect_out_has "    normcmp-swap out/vit --checkpoint $S/models/vit4mnist.ptl"
# ... and finds its helper modules by their bare names
run "$D/usr/bin/normcmp-dump" --model llama2c_model.py:load --checkpoint "$S/models/stories260K.bin" \
    --inputs-args '{"batch": 1, "length": 8}' -o "$T/st.safetensors"
expect_status 0
expect_file "$T/st.safetensors"
run "$D/usr/bin/normcmp-dump" --model example_model:tiny_rmsnorm --tokens 16 -o "$T/ex.safetensors"
expect_status 0
expect_file "$T/ex.safetensors"
# the installed package (import normcmp) uses the installed binary
run env PYTHONPATH="$P" /usr/bin/python3 -c "import sys; sys.path.insert(0, '$S'); import normcmp, example_model as E; m = E.tiny_layernorm(); r = normcmp.analyse(m, m.example_inputs(), out='$T/nb', tokens=32, figures=()); print(normcmp.binary(), len(r.verdicts), normcmp.__file__)"
expect_status 0
expect_out_has "$D/usr/bin/normcmp 7 $P/normcmp/__init__.py"
cd - >/dev/null || exit 1

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
