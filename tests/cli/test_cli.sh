# test_cli.sh - the command line guesses right (issue 12): defaults, help,
# one-line option errors with the nearest option, module names for
# --tensor, data files given to run, warnings about odd inputs and dropped
# tokens, and exit status 2 for what the user must fix.
. tests/cli/lib.sh

f="$PWD/data/vit4mnist/ln00_input.npy"
OUT="$T/out"

# crafted inputs: a safetensors dump with module-style names, an .npy with
# NaN tokens
/usr/bin/python3 - "$T" <<'PY'
import random, sys
sys.path.insert(0, "tests/cli")
import npyw  # no NumPy needed
t = sys.argv[1]
rng = random.Random(5)
tensors = []
for b in range(2):
    tensors.append((f"blocks.{b}.ln1.input", [npyw.normals(rng, 16) for _ in range(32)]))
    tensors.append((f"blocks.{b}.ln1.weight", [1.0] * 16))
npyw.save_safetensors(f"{t}/m.safetensors", tensors)
x = [npyw.normals(rng, 16) for _ in range(8)]
x[2][3] = float("nan")
x[5][0] = x[5][1] = float("inf")
npyw.save_npy(f"{t}/nan_input.npy", x)
PY

# ---- plot without --figure draws a scatter; its help lists the kinds
run "$NC" plot "$f" --out "$OUT/plot" --quiet --no-jacobian
expect_status 0
expect_file "$OUT/plot/ln00_scatter.png"
run "$NC" plot --help
expect_status 0
expect_out_has "usage: normcmp plot FILE... [--figure TYPE[,TYPE...]]"
for k in scatter scatter-grid by-token by-channel jacobian alpha-std alpha-depth tanh-family \
    outlier-steps; do
    expect_out_has "  $k  "
done

# ---- help, help CMD, -V
run "$NC" help
expect_status 0
expect_out_has "usage: normcmp <command> [options]"
expect_out_has "help [COMMAND]"
run "$NC" help fit
expect_status 0
cp "$T/.out" "$T/help_fit"
"$NC" fit --help >"$T/fit_help"
check "help fit prints fit --help" cmp "$T/help_fit" "$T/fit_help"
run "$NC" help sweep
expect_out_has "usage: normcmp sweep CONFIG.json"
run "$NC" help fti
expect_status 2
expect_err "normcmp: unknown command 'fti' (did you mean fit? see 'normcmp --help')"
run "$NC" jacobain x
expect_status 2
expect_err "normcmp: unknown command 'jacobain' (did you mean jacobian? see 'normcmp --help')"
run "$NC" -V
expect_status 0
expect_out_has "normcmp "
cp "$T/.out" "$T/V"
"$NC" --version >"$T/version"
check "-V prints what --version prints" cmp "$T/V" "$T/version"

# ---- unknown options, "-out", missing values: one line, exit 2, nothing written
bad_opt() {
    run "$@"
    expect_status 2
    expect_err "$_want"
    expect_no_file "$OUT/bad"
}
_want="normcmp: fit: unknown option '--otu' (did you mean --out?) (see 'normcmp fit --help')"
bad_opt "$NC" fit "$f" --otu "$OUT/bad"
_want="normcmp: fit: '-out': long options take two dashes (did you mean --out?) (see 'normcmp fit --help')"
bad_opt "$NC" fit "$f" -out "$OUT/bad"
_want="normcmp: run: '-quiet': long options take two dashes (did you mean --quiet?) (see 'normcmp run --help')"
bad_opt "$NC" run configs/demo.json -quiet --out "$OUT/bad"
_want="normcmp: fit: option '--out' needs a value (see 'normcmp fit --help')"
bad_opt "$NC" fit "$f" --out
_want="normcmp: fit: option '-o' (--out) needs a value (see 'normcmp fit --help')"
bad_opt "$NC" fit "$f" -o
_want="normcmp: fit: option '--quiet' takes no value (see 'normcmp fit --help')"
bad_opt "$NC" fit "$f" --quiet=yes --out "$OUT/bad"
_want="normcmp: fit: option '--amp' is ambiguous (could be --amplitude-dyt, --amplitude-dyisru, --amplitude-derf) (see 'normcmp fit --help')"
bad_opt "$NC" fit "$f" --amp free --out "$OUT/bad"
_want="normcmp: fit: unknown option '-Z' (see 'normcmp fit --help')"
bad_opt "$NC" fit "$f" -qZ --out "$OUT/bad"
_want="normcmp: plot: unknown option '--figures' (did you mean --figure?) (see 'normcmp plot --help')"
bad_opt "$NC" plot "$f" --figures scatter --out "$OUT/bad"
_want="normcmp: norm: unknown option '--tensro' (did you mean --tensor?) (see 'normcmp norm --help')"
bad_opt "$NC" norm "$f" --tensro x -o "$OUT/bad.npy"
_want="normcmp: inspect: unknown option '--hepl' (did you mean --help?) (see 'normcmp inspect --help')"
bad_opt "$NC" inspect --hepl
_want="normcmp: synth: unknown option '--dims' (did you mean --dim?) (see 'normcmp synth --help')"
bad_opt "$NC" synth --dims 8 -o "$OUT/bad.npy"
_want="normcmp: merge: unknown option '--quite' (did you mean --quiet?) (see 'normcmp merge --help')"
bad_opt "$NC" merge --quite "$OUT/bad" "$T"
# a value that looks like "-word" is still a value
run "$NC" fit "$f" --label -out --out "$OUT/label" --quiet --no-jacobian
expect_status 0
expect_out_has "-out "

# ---- --tensor: module names as the table prints them, and suggestions
run "$NC" fit "$T/m.safetensors" --tensor 'blocks.*.ln1' --out "$OUT/mod" --no-jacobian
expect_status 0
expect_out_has "blocks.0.ln1 "
expect_out_has "blocks.1.ln1 "
check "two layers, no companion analysed as a layer" test "$(grep -o '^blocks[^ ]*' "$T/.out" | sort -u | wc -l)" -eq 2
run "$NC" fit "$T/m.safetensors" --tensor 'blocks.*.ln1.input' --out "$OUT/mod2" --quiet --no-jacobian
check "the .input names still select" test "$(grep -o '^blocks[^ ]*' "$T/.out" | sort -u | wc -l)" -eq 2
run "$NC" fit "$T/m.safetensors" --tensor 'blocks.*' --out "$OUT/mod3" --quiet --no-jacobian
check "a glob over inputs and weights selects the inputs" test "$(grep -o '^blocks[^ ]*' "$T/.out" | sort -u | wc -l)" -eq 2
run "$NC" fit "$T/m.safetensors" --tensor 'blocks.*.norm1' --out "$OUT/bad"
expect_status 2
expect_err "normcmp: $T/m.safetensors: tensor pattern 'blocks.*.norm1' matches no tensor (--tensor; layers in the file: blocks.0.ln1, blocks.1.ln1; \`normcmp inspect $T/m.safetensors\` lists every tensor)"
expect_no_file "$OUT/bad"

# ---- a weight given as an input: analysed, with a warning
run "$NC" fit "$T/m.safetensors" --tensor blocks.0.ln1.weight --out "$OUT/w" --no-jacobian
expect_status 0
expect_err_has "normcmp: warning: layer 'blocks.0.ln1.weight': tensor 'blocks.0.ln1.weight' is named like a norm's weight, not its input; analysed as an input all the same"
run "$NC" fit "$T/m.safetensors" --tensor blocks.0.ln1.weight --out "$OUT/w" --no-jacobian --quiet
check "--quiet: no warning" test ! -s "$T/.err"

# ---- tokens dropped for NaN: said once per layer
run "$NC" fit "$T/nan_input.npy" --out "$OUT/nan" --no-jacobian --verbose
expect_status 0
expect_err_has "normcmp: layer 'nan': 2 of 8 tokens left out: they hold NaN or infinite values (3 values)"
expect_out_has "used: tokens in the fits"
cp "$T/.err" "$T/nan.err"; cp "$T/.out" "$T/nan.out"
check "fits table: the used column counts the 6 tokens fitted, not the 8 read" \
    awk '$1 == "nan" && $2 == 6 { f = 1 } END { exit !f }' "$T/nan.out"
check "said once" test "$(grep -c "layer 'nan'" "$T/nan.err")" -eq 1
run "$NC" fit "$f" --out "$OUT/clean" --no-jacobian
check "nothing said for a clean layer" test "$(grep -c 'left out' "$T/.err")" -eq 0

# ---- the Jacobian table: its columns explained, the Gaussian references
# beside diag share and bp err, the verdict's best backprop with its number
run "$NC" fit "$f" --out "$OUT/jt" --verbose
expect_status 0
expect_out_has "(G): the value for"
expect_out_has "diag share: share of ||J||_F^2"
expect_out_has "best bp:"
cp "$T/.out" "$T/jt.out"
best=$(sed -n 's/.*best backprop: \(tie: \)\{0,1\}\([a-z_]*\).*bp err \([0-9.e+-]*\);.*/\2 \3/p' "$T/jt.out")
check "the verdict names the best backprop surrogate and its bp err ($best)" test -n "$best"
check "the Jacobian table shows the same surrogate and number" \
    grep -qE "^ln00 .*  $best\$" "$T/jt.out"
check "the Jacobian table has the Gaussian reference columns" \
    grep -qE "^layer +diag share +\(G\) +bp err +\(G\)" "$T/jt.out"

# ---- run on a data file: says what it is and what fits
run "$NC" run "$f" --out "$OUT/bad"
expect_status 2
expect_err "normcmp: run: $f is an .npy file, not a config; to analyse it: normcmp fit $f (see 'normcmp run --help')"
run "$NC" sweep "$T/m.safetensors"
expect_status 2
expect_err "normcmp: sweep: $T/m.safetensors is a .safetensors file, not a config; to analyse it: normcmp fit $T/m.safetensors (see 'normcmp sweep --help')"

# ---- options named in their own errors
run "$NC" plot "$f" --curves bogus --out "$OUT/bad"
expect_status 2
expect_err_has "normcmp: plot: --curves: unknown fit 'bogus'"
expect_no_file "$OUT/bad"
run "$NC" fit "$f" --fits bogus --out "$OUT/bad"
expect_err_has "normcmp: fit: --fits: unknown fit 'bogus'"
run "$NC" plot "$f" --dpi 2400 --size 100x100 --out "$OUT/bad"
expect_status 2
expect_err "normcmp: plot: --size 100x100 at --dpi 2400 makes 240000 x 240000 pixels (expected 16 to 20000 a side) (see 'normcmp plot --help')"
expect_no_file "$OUT/bad"
printf '{"layers": [{"file": "%s"}], "figures": [{"type": "scatter", "width": 100, "dpi": 2400}]}' \
    "$f" >"$T/big.json"
run "$NC" run "$T/big.json" --out "$OUT/bad"
expect_status 2
expect_err "normcmp: $T/big.json: figures[0].width: expected 16 to 20000 pixels at dpi 2400 (got 100 in = 240000 pixels)"
run "$NC" synth --preset bogus -o "$OUT/bad.npy"
expect_status 2
expect_err "normcmp: synth: --preset: expected early, middle, late, all or outlier-steps, got 'bogus' (see 'normcmp synth --help')"

run "$NC" plot "$f" --layer 'zz*' --out "$OUT/bad"
expect_status 2
expect_err "normcmp: --layer 'zz*' matches no layer (the layers: ln00)"

# ---- exit 2 for what the user must fix
run "$NC" norm "$f" -o "$T/missing_dir/y.npy"
expect_status 2
expect_err "normcmp: norm: -o $T/missing_dir/y.npy: folder '$T/missing_dir' does not exist (create it first) (see 'normcmp norm --help')"
ln -s "$T/loop.json" "$T/loop.json"
run "$NC" run "$T/loop.json" --out "$OUT/bad"
expect_status 2
expect_err "normcmp: $T/loop.json: cannot open config file: Too many levels of symbolic links"
expect_no_file "$OUT/bad"
# ---- user-facing text points to the repository's docs, not to files
# outside it (BRIEF.md, DESIGN.md), and never to the project's brief
for c in "" inspect synth norm fit jacobian plot sweep run merge; do
    "$NC" $c --help >>"$T/all_help" 2>&1
done
run grep -l -i -E 'BRIEF\.md|DESIGN\.md|(^|[^a-z])brief([^a-z]|$)' README.md docs/*.md docs/normcmp.1 "$T/all_help"
check "no BRIEF.md, DESIGN.md or 'brief' in README, docs/ or --help: $(tr '\n' ' ' <"$T/.out")" \
    test "$_status" -eq 1
# ---- small command-line items (review R2)
run "$NC" help help
expect_status 0
expect_out_has "help [COMMAND]"
run "$NC" fit "$f" --threads 99 --out "$OUT/bad"
expect_status 2
expect_err "normcmp: fit: --threads: 99 is out of range: expected [0, 16] (see 'normcmp fit --help')"
expect_no_file "$OUT/bad"
mkdir -p "$T/dumpdir"
run "$NC" run "$T/dumpdir"
expect_status 2
expect_err "normcmp: run: $T/dumpdir is a folder, not a config; to analyse it: normcmp fit $T/dumpdir (see 'normcmp run --help')"
ln -s "$PWD/scripts/dump_activations.py" "$T/normcmp-dump"  # finds its package beside the file it links to
run /usr/bin/python3 "$T/normcmp-dump" --help
expect_status 0
expect_out_has "usage: normcmp-dump "
# a --layer pattern matching none of 11 long-named layers: the names that
# fit, then how many more
many=""
for k in 01 02 03 04 05 06 07 08 09 10 11; do
    ln -s "$f" "$T/layer_with_a_rather_long_name_${k}_input.npy"
    many="$many $T/layer_with_a_rather_long_name_${k}_input.npy"
done
run "$NC" plot $many --layer 'foo*' --out "$OUT/bad"
expect_status 2
expect_err_has "matches no layer (the layers: layer_with_a_rather_long_name_01, "
expect_err_has " and 6 more)"
run "$NC" plot "$f" --figure outlier-steps --out "$OUT/bad"
expect_status 2
expect_err_has "--experiment outlier-steps"
expect_no_file "$OUT/bad"
# a label with leading dots names no hidden file
run "$NC" plot "$f" --label ../../lab --out "$OUT/dots" --quiet --no-jacobian
expect_status 0
expect_file "$OUT/dots/___.._lab_scatter.png"
check "no hidden file from a label: $(ls -A "$OUT/dots" | tr '\n' ' ')" \
    test -z "$(ls -A "$OUT/dots" | grep '^\.')"
# ---- --quiet leaves stderr to errors: the real-output warning of an
# explicit --norm that disagrees is silent (it stays in report.json), the
# --strict error is not
L00=data/vit4mnist/ln00_input.npy
run "$NC" fit "$L00" --norm rmsnorm --out "$OUT/q" --no-jacobian
expect_status 0
expect_err_has "normcmp: warning: ln00: the real output differs from rmsnorm"
run "$NC" fit "$L00" --norm rmsnorm --out "$OUT/q" --no-jacobian --quiet
expect_status 0
check "--quiet: no warning: $(head -c 200 "$T/.err")" test ! -s "$T/.err"
run grep -c 'the real output differs from rmsnorm' "$OUT/q/report.json"
expect_out_has "1"
run "$NC" fit "$L00" --norm rmsnorm --out "$OUT/q" --no-jacobian --quiet --strict
expect_status 2
expect_err "normcmp: --strict: the real output of 1 layer disagrees with the norm used (report.json: real_output_check)"
run "$NC" fit --help
expect_out_has "-q, --quiet                nothing on stderr but errors: no progress, notes or"

# ---- '-' is not standard output anywhere: refused, nothing named '-'
mkdir "$T/dash"
for cmd in fit jacobian plot; do
    run sh -c "cd '$T/dash' && exec '$NC' $cmd '$PWD/$L00' -o - --quiet"
    expect_status 2
    expect_err "normcmp: $cmd: --out: expected a folder, not '-' (the outputs are files in a folder, never standard output; ./- names a folder called -) (see 'normcmp $cmd --help')"
done
run sh -c "cd '$T/dash' && exec '$NC' fit '$PWD/$L00' --out=- --quiet"
expect_status 2
run sh -c "cd '$T/dash' && exec '$NC' norm '$PWD/$L00' -o -"
expect_status 2
expect_err "normcmp: norm: -o: expected a file name, not '-' (the output is a .npy file, never standard output; ./- names a file called -) (see 'normcmp norm --help')"
run sh -c "cd '$T/dash' && exec '$NC' merge - '$OUT/q'"
expect_status 2
expect_err "normcmp: merge: OUT: expected a folder, not '-' (the outputs are files in a folder, never standard output; ./- names a folder called -) (see 'normcmp merge --help')"
check "no file or folder named '-': $(ls -A "$T/dash")" test -z "$(ls -A "$T/dash")"
done_tests
