# test_normcheck.sh - the norm a layer really is (docs/report.md,
# "real_output_check"): kind and eps from a dump's __metadata__, read back
# from the real output where nothing says them, an explicit wrong norm
# warned and flagged, --strict exit 2. Dumps built by make_norm_dumps.py
# here, and by scripts/dump_activations.py on the example RMSNorm model.
. tests/cli/lib.sh
PY=/usr/bin/python3

check "make_norm_dumps.py" $PY tests/cli/make_norm_dumps.py "$T"

# field FILE EXPR: prints EXPR evaluated on report.json's layers (list L)
field() {
    $PY -c "import json,sys; L=json.load(open(sys.argv[1]))['layers']; print($2)" "$1/report.json"
}
expect_field() { # DIR EXPR EXPECTED
    got=$(field "$1" "$2")
    if [ "$got" = "$3" ]; then _ok; else _bad "$2: expected '$3', got '$got'"; fi
}

# a dump with metadata, no flags: RMSNorm with the model's eps, from metadata
run "$NC" fit "$T/rms.safetensors" -o "$T/o1" --no-jacobian --verbose
expect_status 0
expect_field "$T/o1" "' '.join('%s:%g:%s:%s:%s' % (l['norm'], l['eps'], l['norm_source'], l['eps_source'], l['real_output_check']['status']) for l in L)" \
    "rmsnorm:0.001:metadata:metadata:ok rmsnorm:0.001:metadata:metadata:ok"
if grep -q "detected\|warning" "$T/.err"; then _bad "nothing to detect or warn about"; else _ok; fi
expect_out_has "rms/meta "

# no metadata: kind and eps read back from the real output, one line each
run "$NC" fit "$T/rms_nometa.safetensors" -o "$T/o2" --no-jacobian --verbose
expect_status 0
expect_err_has "normcmp: blocks.0.norm: detected rmsnorm eps 0.001 from the real output"
expect_err_has "normcmp: blocks.1.norm: detected rmsnorm eps 0.001 from the real output"
expect_field "$T/o2" "' '.join('%s:%r:%s:%s:%s' % (l['norm'], l['eps'], l['norm_source'], l['eps_source'], l['real_output_check']['status']) for l in L)" \
    "rmsnorm:0.001:detected:detected:detected rmsnorm:0.001:detected:detected:detected"
# the first pass's disagreement and the detection are in the report
expect_field "$T/o2" "L[0]['real_output_check']['first_pass']['norm'], L[0]['real_output_check']['first_pass']['max_abs_diff'] > 0.1, L[0]['real_output_check']['agrees'], L[0]['real_output_check']['q'] <= L[0]['real_output_check']['q_max']" \
    "layernorm True True True"
expect_field "$T/o2" "abs(L[0]['real_output_check']['detection']['eps']['estimate'] / 1e-3 - 1) < 1e-4" "True"
expect_out_has "rms/det "

# eps wrong in the metadata (not explicit): detected, the kind kept
run "$NC" fit "$T/rms_wrongeps.safetensors" -o "$T/o3" --no-jacobian -q
expect_status 0
expect_field "$T/o3" "' '.join('%s:%r:%s:%s' % (l['norm'], l['eps'], l['norm_source'], l['eps_source']) for l in L)" \
    "rmsnorm:0.001:metadata:detected rmsnorm:0.001:metadata:detected"

# an npy pair without metadata: detected
run "$NC" fit "$T/pair_input.npy" -o "$T/o4" --no-jacobian
expect_status 0
expect_err_has "normcmp: pair: detected rmsnorm eps 0.001"
expect_field "$T/o4" "L[0]['norm'], L[0]['norm_source'], L[0]['real_output_check']['status']" \
    "rmsnorm detected detected"

# eps below what float32 outputs show: not identified, the RMSNorm default
# kept; no weight in the dump: estimated
run "$NC" fit "$T/big_input.npy" -o "$T/o5" --no-jacobian
expect_status 0
expect_err_has "eps not identified by the data"
expect_err_has "; weight estimated from it"
expect_field "$T/o5" "L[0]['norm'], L[0]['eps'], L[0]['eps_source'], L[0]['real_output_check']['detection']['eps']['identified'], L[0]['real_output_check']['detection']['eps']['interval'][1] > 1e-6, L[0]['real_output_check']['detection']['weight_source']" \
    "rmsnorm 1e-06 default False True estimated"

# an explicit wrong --norm: kept, warned, flagged in the table, status set
# (the warnings on stderr; --quiet leaves stderr to errors)
run "$NC" fit "$T/rms.safetensors" --norm layernorm -o "$T/o6" --no-jacobian --verbose
expect_status 0
expect_err_has "normcmp: warning: blocks.0.norm: the real output differs from layernorm eps 0.001 (kind from flag, eps from metadata)"
expect_err_has "the real output is rmsnorm"
expect_out_has "ln/flag! "
expect_field "$T/o6" "' '.join(l['norm'] + ':' + l['real_output_check']['status'] for l in L)" \
    "layernorm:mismatch_explicit layernorm:mismatch_explicit"
# --strict: the same is exit 2, with the report written
run "$NC" fit "$T/rms.safetensors" --norm layernorm -o "$T/o7" --no-jacobian -q --strict
expect_status 2
expect_err_has "normcmp: --strict: the real output of 2 layers disagrees with the norm used"
expect_file "$T/o7/report.json"
# --strict with agreement: exit 0; an explicit wrong eps is a mismatch too
run "$NC" fit "$T/rms.safetensors" -o "$T/o8" --no-jacobian -q --strict
expect_status 0
run "$NC" fit "$T/pair_input.npy" --norm rmsnorm --eps 1e-6 -o "$T/o9" --no-jacobian --strict
expect_status 2
expect_err_has "eps 0.001 +-"
# a config's norm is explicit as well; run --strict
cat >"$T/c.json" <<JSON
{"name": "c", "norm": "layernorm", "layers": [{"file": "$T/pair_input.npy"}]}
JSON
run "$NC" run "$T/c.json" -o "$T/o10" -q --strict
expect_status 2
expect_field "$T/o10" "L[0]['norm_source'], L[0]['real_output_check']['status']" "config mismatch_explicit"
# a metadata value that is not valid: exit 2 naming the file and key
$PY - "$T" <<'PYEOF'
import json, struct, sys
t = sys.argv[1]
b = open(t + "/rms.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); h["__metadata__"]["blocks.0.norm.eps"] = "tiny"
hj = json.dumps(h).encode(); hj += b" " * (-len(hj) % 8)
open(t + "/bad.safetensors", "wb").write(struct.pack("<Q", len(hj)) + hj + b[8 + n:])
PYEOF
run "$NC" fit "$T/bad.safetensors" -o "$T/o11" -q
expect_status 2
expect_err "normcmp: $T/bad.safetensors: __metadata__[\"blocks.0.norm.eps\"]: expected a number in [0, 1], got 'tiny'"

# the dump script on the example RMSNorm model, then fit with no flags
# (the script needs PyTorch and NumPy)
if have_py torch numpy; then
    run $PY scripts/dump_activations.py --model scripts/example_model.py:tiny_rmsnorm \
        -o "$T/tiny.safetensors" --tokens 64
    expect_status 0
    run "$NC" fit "$T/tiny.safetensors" -o "$T/o12" --no-jacobian
    expect_status 0
    expect_field "$T/o12" "sorted(set('%s:%g:%s:%s' % (l['norm'], l['eps'], l['norm_source'], l['real_output_check']['status']) for l in L))" \
        "['rmsnorm:1e-06:metadata:ok']"
    # and on the shipped stories260K (llama2.c, RMSNorm eps 1e-5)
    M=data/models/stories260K.bin
    run $PY scripts/dump_activations.py --model scripts/llama2c_model.py:load --checkpoint "$M" \
        -o "$T/stories.safetensors"
    expect_status 0
    run "$NC" fit "$T/stories.safetensors" -o "$T/o13" --no-jacobian -q
    expect_status 0
    expect_field "$T/o13" "sorted(set('%s:%g:%s:%s' % (l['norm'], l['eps'], l['eps_source'], l['real_output_check']['status']) for l in L))" \
        "['rmsnorm:1e-05:metadata:ok']"
else
    skip "the dump script's RMSNorm dumps" python3-torch
fi
done_tests
