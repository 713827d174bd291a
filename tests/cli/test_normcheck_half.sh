# test_normcheck_half.sh - the real-output check against the noise model of
# the output's dtype (docs/report.md, "real_output_check"): float32,
# float16 and bfloat16 versions of the shipped real layers (vit4mnist
# LayerNorm, stories260K RMSNorm) with right and wrong metadata, and
# synthetic layers on both sides of every threshold the check uses
# (make_half_dumps.py says which fixture sits where; only the affine fit
# runs: the check does not depend on the fits). Each threshold fixture
# also checks its own position, so that a fixture that drifted away from its
# threshold fails instead of silently testing nothing.
. tests/cli/lib.sh
PY=/usr/bin/python3

check "make_half_dumps.py" $PY tests/cli/make_half_dumps.py "$T"

# field DIR EXPR: EXPR on report.json's first layer (L), its check (c), the
# detection (d) and the eps fit (e)
field() {
    $PY -c "import json,sys
L=json.load(open(sys.argv[1]))['layers'][0]; c=L['real_output_check']
d=c.get('detection', {}); e=d.get('eps', {}); print($2)" "$1/report.json"
}
expect_field() { # DIR EXPR EXPECTED
    got=$(field "$1" "$2" 2>&1)
    if [ "$got" = "$3" ]; then _ok; else _bad "$2: expected '$3', got '$got'"; fi
}

# ---- the real layers: every precision, every metadata variant
for prec in f32 f16 bf16 bf16f32 f16after bf16after; do
    for v in right wrongkind eps100 nometa outonly; do
        run "$NC" fit "$T/half_${prec}_$v.safetensors" -o "$T/o_${prec}_$v" --no-jacobian --fits linear
        expect_status 0
        cp "$T/.err" "$T/err_${prec}_$v"
        check "$prec $v: what the check says of each layer" \
            $PY tests/cli/half_expect.py "$T/o_${prec}_$v/report.json" "$T/err_${prec}_$v" "$prec" "$v"
    done
done
# metadata the data contradict is a warning: --strict exits 2
run "$NC" fit "$T/half_f16_eps100.safetensors" -o "$T/s1" --no-jacobian --fits linear --strict
expect_status 2
expect_err_has "normcmp: warning: ln05: detected layernorm eps 1e-05 from the real output"
expect_err_has "normcmp: --strict: the real output of 5 layers disagrees with the norm used"
# an explicit eps 100x off at float16: kept, a mismatch, exit 2 with --strict
run "$NC" fit "$T/half_f16_right.safetensors" --eps 1e-3 -o "$T/s2" --no-jacobian --fits linear --strict
expect_status 2
expect_err_has "normcmp: warning: ln05: the real output differs from layernorm eps 0.001 (kind from metadata, eps from flag) beyond f16 rounding"
# and an explicit wrong kind at bfloat16
run "$NC" fit "$T/half_bf16_right.safetensors" --norm rmsnorm -o "$T/s3" --no-jacobian --fits linear
expect_status 0
expect_err_has "normcmp: warning: ln00: the real output differs from rmsnorm eps 1e-05 (kind from flag, eps from metadata) beyond bf16 rounding"
expect_err_has "the real output is layernorm"
$PY -c "import json,sys; L=json.load(open(sys.argv[1]))['layers']
sys.exit(not all(l['real_output_check']['status'] == 'mismatch_explicit' for l in L[:3]))" \
    "$T/s3/report.json" && _ok || _bad "explicit rmsnorm on LayerNorm layers: mismatch_explicit"
# the Z threshold sits between these: eps 1e-5 is 0.3..3 se from ln00's
# float16 estimate (a 10x smaller Z flags a right eps), and 1e-3 is 3..30 se
# (plus the bias) from ln05's (a 10x larger Z accepts a 100x wrong eps)
pos() { # DIR LAYER EXPR: EXPR on that layer's eps fit e
    $PY -c "import json,sys
L=[l for l in json.load(open(sys.argv[1]))['layers'] if l['name'] == sys.argv[2]][0]
e=L['real_output_check']['detection']['eps']; print($3)" "$1/report.json" "$2"
}
got=$(pos "$T/o_f16_right" ln00 "0.3 < abs(e['estimate'] - 1e-5) / e['se'] < 3")
[ "$got" = True ] && _ok || _bad "ln00 f16: eps 1e-5 between 0.3 and 3 se from the estimate"
got=$(pos "$T/o_f16_right" ln05 "3 < (1e-3 - e['estimate'] - e['rounding_bias']) / e['se'] < 30")
[ "$got" = True ] && _ok || _bad "ln05 f16: eps 1e-3 between 3 and 30 se beyond the estimate"

# ---- zero-mean tokens: LayerNorm and RMSNorm agree, the kind is undetermined
run "$NC" fit "$T/thr_zeromean_f32.safetensors" -o "$T/z1" --no-jacobian --fits linear --verbose
expect_status 0
expect_field "$T/z1" "d['kind_verdict'], c['status'], L['norm'], L['norm_source']" \
    "undetermined ok layernorm metadata"
expect_field "$T/z1" "d['q_free']['layernorm'] < c['q_max'], d['q_free']['rmsnorm'] < c['q_max']" \
    "True True"
expect_err_has "normcmp: L: the norm kind is undetermined at f32 precision"
expect_out_has "ln/meta? "
run "$NC" fit "$T/thr_zeromean_bf16.safetensors" -o "$T/z2" --no-jacobian --fits linear --verbose
expect_status 0
expect_field "$T/z2" "d['kind_verdict'], c['status'], L['norm'], L['norm_source']" \
    "undetermined ok layernorm default"
expect_err_has "undetermined at bf16 precision"
expect_err_has "; used layernorm (default)"
expect_out_has "ln/def? "

# ---- q_max: the wrong kind just above it is excluded, just below it is not
run "$NC" fit "$T/thr_above_bf16.safetensors" -o "$T/a1" --no-jacobian --fits linear
expect_status 0
expect_field "$T/a1" "c['q_max'] < d['q_free']['rmsnorm'] < 10 * c['q_max']" "True"
expect_field "$T/a1" "d['kind_verdict'], L['norm'], L['norm_source'], c['status']" \
    "identified layernorm detected detected"
expect_err_has "normcmp: warning: L: detected layernorm eps 1e-05 from the real output"
run "$NC" fit "$T/thr_below_bf16.safetensors" -o "$T/a2" --no-jacobian --fits linear
expect_status 0
expect_field "$T/a2" "c['q_max'] / 10 < d['q_free']['rmsnorm'] < c['q_max']" "True"
expect_field "$T/a2" "d['kind_verdict'], L['norm'], L['norm_source'], c['status']" \
    "undetermined rmsnorm metadata ok"
# the right kind with more rounding than the minimum: q between q_max/10 and q_max
run "$NC" fit "$T/thr_noisy_bf16.safetensors" -o "$T/a3" --no-jacobian --fits linear
expect_status 0
expect_field "$T/a3" "c['q_max'] / 10 < d['q_free']['layernorm'] < c['q_max'], c['q_max'] / 10 < c['q'] < c['q_max']" \
    "True True"
expect_field "$T/a3" "d['kind_verdict'], L['norm'], L['eps'], c['status']" \
    "identified layernorm 1e-05 ok"
if grep -q warning "$T/.err"; then _bad "no warning on a right norm"; else _ok; fi

# ---- the rounding bias of eps: a model whose scales run 0.6 u_c high is
# allowed (0.6 of the bias), a metadata eps 4 biases off is not
run "$NC" fit "$T/thr_biased_f32.safetensors" -o "$T/b1" --no-jacobian --fits linear
expect_status 0
expect_field "$T/b1" "3 * e['se'] + e['rounding_bias'] / 10 < abs(e['estimate'] - 1e-5) < 3 * e['se'] + e['rounding_bias']" \
    "True"
expect_field "$T/b1" "L['eps'], L['eps_source'], c['status'], d['eps_contradicted']" \
    "1e-05 metadata ok False"
run "$NC" fit "$T/thr_epsoff_f32.safetensors" -o "$T/b2" --no-jacobian --fits linear
expect_status 0
expect_field "$T/b2" "3 * e['se'] + e['rounding_bias'] < abs(L['real_output_check']['first_pass']['eps'] - e['estimate']) < 3 * e['se'] + 10 * e['rounding_bias']" \
    "True"
expect_field "$T/b2" "L['eps'], L['eps_source'], c['status'], d['eps_contradicted']" \
    "1e-05 detected detected True"
expect_err_has "normcmp: warning: L: detected layernorm eps 1e-05 from the real output"
# the output's share of the bias, bfloat16 and float16: the same two sides
for h in bf16 f16; do
    run "$NC" fit "$T/thr_biased_$h.safetensors" -o "$T/bb_$h" --no-jacobian --fits linear
    expect_status 0
    expect_field "$T/bb_$h" "3 * e['se'] + e['rounding_bias'] / 10 < abs(e['estimate'] - 1e-5) < 3 * e['se'] + e['rounding_bias']" \
        "True"
    expect_field "$T/bb_$h" "L['eps'], L['eps_source'], c['status'], d['eps_contradicted']" \
        "1e-05 metadata ok False"
    run "$NC" fit "$T/thr_epsoff_$h.safetensors" -o "$T/be_$h" --no-jacobian --fits linear
    expect_status 0
    expect_field "$T/be_$h" "3 * e['se'] + e['rounding_bias'] < abs(L['real_output_check']['first_pass']['eps'] - e['estimate']) < 3 * e['se'] + 10 * e['rounding_bias']" \
        "True"
    expect_field "$T/be_$h" "L['eps'], L['eps_source'], d['eps_contradicted']" "1e-05 detected True"
done
# a real rounding chain (Hugging Face RMSNorm, bfloat16, d = 4096): its bias
# is inside the share, and more than 3 se: no false alarm only thanks to it
run "$NC" fit "$T/thr_hf_bf16.safetensors" -o "$T/hf" --no-jacobian --fits linear
expect_status 0
expect_field "$T/hf" "3 * e['se'] < abs(e['estimate'] - 1e-5) < 3 * e['se'] + e['rounding_bias']" "True"
expect_field "$T/hf" "L['norm'], L['eps'], L['eps_source'], c['status']" "rmsnorm 1e-05 metadata ok"
if grep -q warning "$T/.err"; then _bad "no warning on Hugging Face's bfloat16 RMSNorm"; else _ok; fi

# ---- q of a fixed eps: token scales jittering beyond the model's allowance
# fit one by one and allow eps, but disagree element by element
run "$NC" fit "$T/thr_jitter_f32.safetensors" -o "$T/j1" --no-jacobian --fits linear
expect_status 0
expect_field "$T/j1" "c['q_max'] < c['q'] < 10 * c['q_max'], d['q_free']['layernorm'] < c['q_max'] / 10" \
    "True True"
expect_field "$T/j1" "d['kind_verdict'], d['eps_contradicted'], c['agrees'], c['status']" \
    "identified False False mismatch"
expect_err_has "normcmp: warning: L: the real output differs from layernorm eps 1e-05 (kind from metadata, eps from metadata) beyond f32 rounding (q "

# ---- degenerate outputs (constant tokens, a zero weight): undetermined, no
# false identification, no warning
for f in deg_const deg_zerow; do
    run "$NC" fit "$T/${f}_input.npy" -o "$T/$f" --no-jacobian --fits linear
    expect_status 0
    expect_field "$T/$f" "d['kind_verdict'], c['status'], d['q_free']['layernorm'] <= c['q_max'], d['q_free']['rmsnorm'] <= c['q_max']" \
        "undetermined ok True True"
    if grep -q warning "$T/.err"; then _bad "$f: no warning"; else _ok; fi
done
done_tests
