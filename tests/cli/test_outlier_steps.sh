# test_outlier_steps.sh - the outlier-steps generator choice (synth --rng,
# the config's synth.rng and synth.draws): what is accepted, and one-line
# errors with exit status 2 for what is not. The numbers themselves are
# checked against NumPy in tests/ref/test_outlier_steps.py.
. tests/cli/lib.sh

OUT="$T/out"

run "$NC" synth -o "$T/a.npy" --preset outlier-steps --rng numpy --seed 1
expect_status 0
expect_file "$T/a.npy"
run "$NC" synth -o "$T/b.npy" --preset outlier-steps --rng normcmp --seed 1
expect_status 0
check "the two generators give different tokens" sh -c "! cmp -s '$T/a.npy' '$T/b.npy'"

run "$NC" synth -o "$T/c.npy" --preset late --rng numpy
expect_status 2
expect_err "normcmp: synth: --rng: only the outlier-steps preset takes a generator (see 'normcmp synth --help')"
expect_no_file "$T/c.npy"
run "$NC" synth -o "$T/c.npy" --preset outlier-steps --rng mt
expect_status 2
expect_err "normcmp: synth: --rng: expected normcmp or numpy, got 'mt' (see 'normcmp synth --help')"
run "$NC" synth -o "$T/c.npy" --preset outlier-steps --rng numpy --seed 4294967296
expect_status 2
expect_err "normcmp: synth: --seed: expected 0 .. 4294967295 with --rng numpy (np.random.seed's range) (see 'normcmp synth --help')"
expect_no_file "$T/c.npy"

cfg() { # cfg NAME SYNTH-JSON
    printf '{"layers": [{"synth": %s}], "figures": []}\n' "$2" >"$T/$1.json"
}
bad_run() {
    run "$NC" run "$T/$1.json" --out "$OUT" --quiet
    expect_status 2
    expect_err "normcmp: $T/$1.json: $2"
    expect_no_file "$OUT"
}
cfg rng_late '{"preset": "late", "tokens": 8, "dim": 16, "rng": "numpy"}'
bad_run rng_late 'layers[0].synth.rng: expected "rng" only with the "outlier-steps" preset'
cfg rng_bad '{"preset": "outlier-steps", "rng": "NumPy"}'
bad_run rng_bad 'layers[0].synth.rng: expected "normcmp" or "numpy"'
cfg rng_seed '{"preset": "outlier-steps", "rng": "numpy", "seed": 4294967296}'
bad_run rng_seed 'layers[0].synth.rng: expected a seed below 2^32 with "numpy" (np.random.seed'"'"'s range)'
cfg draws_late '{"preset": "late", "tokens": 8, "dim": 16, "draws": 10}'
bad_run draws_late 'layers[0].synth.draws: expected "draws" only with the "outlier-steps" preset'
cfg draws_seed '{"preset": "outlier-steps", "rng": "numpy", "seed": 4294967290, "draws": 10}'
bad_run draws_seed 'layers[0].synth.draws: expected seed + draws - 1 below 2^32 with "numpy"'
cfg draws_neg '{"preset": "outlier-steps", "draws": -1}'
run "$NC" run "$T/draws_neg.json" --out "$OUT" --quiet
expect_status 2
expect_err_has "layers[0].synth.draws: expected"

# a small spread: the summary line and the report block
cfg spread '{"preset": "outlier-steps", "rng": "numpy", "seed": 1, "draws": 20}'
run "$NC" run "$T/spread.json" --out "$OUT"
expect_status 0
expect_out_has "over 20 draws (seeds 1..20): ratio median"
check "report has the spread" /usr/bin/python3 -c "
import json, sys
r = json.load(open('$OUT/report.json'))
s = r['layers'][0]['outlier_steps']['spread']
sys.exit(0 if s['draws'] == 20 and s['rng'] == 'numpy' and s['seed_last'] == 20 else 1)"

done_tests
