# test_dropin.sh - the drop-in parameters on the command line
# (docs/dropin.md): the three files appear in the output set and in
# "outputs", --no-dropin (and "dropin": false) leaves them out; --role and
# the config's "roles" name roles, the flags first; --alpha0 and "alpha0"
# override the paper's; every bad value is one line naming the option or
# the key, exit 2 and no output folder; the stdout blocks; merge refuses a
# shard whose drop-in file is missing or is not one.
. tests/cli/lib.sh

good="$PWD/data/vit4mnist/ln00_input.npy"
data="$PWD/data/vit4mnist"

# ---- the files, listed in the report; the blocks on stdout
run "$NC" fit "$data/ln00_input.npy" "$data/ln05_input.npy" --out "$T/two" --no-jacobian --verbose
expect_status 0
for f in dropin_dyt dropin_dyt_alpha0 dropin_dyisru; do expect_file "$T/two/$f.safetensors"; done
expect_out_has "Drop-in parameters (dropin_dyt, dropin_dyt_alpha0, dropin_dyisru .safetensors"
expect_out_has "Alpha by role (per model group = layers of one source, norm kind and d)"
expect_out_has "not a proven initialisation"
expect_out_has "  d = 64 layernorm unknown          2 layers  median alpha "
check "the files are listed in outputs" /usr/bin/python3 -c "
import json, sys
r = json.load(open('$T/two/report.json'))
o = r['outputs']
sys.exit(0 if all(f in o for f in ('dropin_dyt.safetensors', 'dropin_dyt_alpha0.safetensors',
                                   'dropin_dyisru.safetensors')) else 1)"
# `jacobian` prints its table only
run "$NC" jacobian "$good" --out "$T/jac"
expect_status 0
if grep -q "Drop-in parameters" "$T/.out"; then _bad "jacobian printed the drop-in block"; else _ok; fi
expect_file "$T/jac/dropin_dyt.safetensors"

# ---- --no-dropin and "dropin": false
run "$NC" fit "$good" --out "$T/none" --quiet --no-dropin
expect_status 0
expect_no_file "$T/none/dropin_dyt.safetensors"
check "--no-dropin: no dropin block, and the config says so" /usr/bin/python3 -c "
import json, sys
r = json.load(open('$T/none/report.json'))
sys.exit(0 if 'dropin' not in r['layers'][0] and r['config']['dropin']['enabled'] is False
         else 1)"
printf '{"dropin": false, "layers": [{"file": "%s"}]}' "$good" >"$T/off.json"
run "$NC" run "$T/off.json" --out "$T/off" --quiet
expect_status 0
expect_no_file "$T/off/dropin_dyisru.safetensors"

# ---- roles: the flags first, then the config's, then the built-in names
cat >"$T/roles.json" <<JSON
{"roles": {"^ln": "mlp_norm"}, "alpha0": [0.9, 0.1],
 "layers": [{"file": "$data/ln00_input.npy"}, {"file": "$data/ln05_input.npy"}]}
JSON
run "$NC" run "$T/roles.json" --out "$T/roles" --quiet --role 'ln00$=attn_norm'
expect_status 0
check "--role before the config's roles; config alpha0 by role" /usr/bin/python3 -c "
import json, sys
r = json.load(open('$T/roles/report.json'))
L = {l['name']: l for l in r['layers']}
ok = (L['ln00']['role'] == 'attn_norm' and L['ln05']['role'] == 'mlp_norm' and
      L['ln00']['role_source'] == \"--role 'ln00\$'\" and
      L['ln05']['role_source'] == \"config roles '^ln'\" and
      L['ln00']['dropin']['dyt_alpha0']['alpha'] == 0.9 and
      L['ln05']['dropin']['dyt_alpha0']['alpha'] == 0.1 and
      [x['origin'] for x in r['config']['dropin']['roles']] == ['--role', 'config roles'])
sys.exit(0 if ok else 1)"
run "$NC" run "$T/roles.json" --out "$T/roles2" --quiet --alpha0 0.3
expect_status 0
check "--alpha0 overrides the config's" /usr/bin/python3 -c "
import json, sys
r = json.load(open('$T/roles2/report.json'))
sys.exit(0 if all(l['dropin']['dyt_alpha0']['alpha'] == 0.3 for l in r['layers']) else 1)"

# ---- bad flags: one line, exit 2, nothing written
bad_flag() { # $1 expected stderr, then the flags
    want=$1
    shift
    run "$NC" fit "$good" --out "$T/bad" "$@"
    expect_status 2
    expect_err "$want"
    expect_no_file "$T/bad"
}
bad_flag "normcmp: fit: --role: 'ln(0' is not a usable POSIX extended regular expression (regcomp: Unmatched ( or \\() (see 'normcmp fit --help')" --role 'ln(0=attn_norm'
bad_flag "normcmp: fit: --role: '((a{1,100}){1,100}){1,100}' is not a usable POSIX extended regular expression (its {m,n} bounds multiply to more than 10000 (normcmp's limit)) (see 'normcmp fit --help')" --role '((a{1,100}){1,100}){1,100}=x'
bad_flag "normcmp: fit: --role: '(a*)\\1' is not a usable POSIX extended regular expression (a back-reference (\\1) is not accepted) (see 'normcmp fit --help')" --role '(a*)\1=x'
bad_flag "normcmp: fit: --role: expected REGEX=NAME, NAME 1 to 47 letters, digits, '_', '.' or '-' (attn_norm, mlp_norm, final_norm, ...), got 'lnx' (see 'normcmp fit --help')" --role lnx
bad_flag "normcmp: fit: --role: expected REGEX=NAME, NAME 1 to 47 letters, digits, '_', '.' or '-' (attn_norm, mlp_norm, final_norm, ...), got 'ln0=attn norm' (see 'normcmp fit --help')" --role 'ln0=attn norm'
bad_flag "normcmp: fit: --alpha0: 0 is out of range: expected [1e-06, 1e+06] (see 'normcmp fit --help')" --alpha0 0
bad_flag "normcmp: fit: --alpha0 (OTHER): expected a number in [1e-06, 1e+06], got 'x' (see 'normcmp fit --help')" --alpha0 0.8,x
run "$NC" run "$T/roles.json" --out "$T/bad" --role 'a(b=x'
expect_status 2
expect_err "normcmp: run: --role: 'a(b' is not a usable POSIX extended regular expression (regcomp: Unmatched ( or \\() (see 'normcmp run --help')"

# ---- bad config keys: the file and the key path
bad_config() { # $1 the key and value, $2 what follows "<file>: "
    printf '{"layers": [{"file": "%s"}], %s}' "$good" "$1" >"$T/c.json"
    run "$NC" run "$T/c.json" --out "$T/bad" --quiet
    expect_status 2
    expect_err "normcmp: $T/c.json: $2"
    expect_no_file "$T/bad"
}
bad_config '"roles": {"ln(0": "attn_norm"}' 'roles["ln(0"]: expected a usable POSIX extended regular expression as the key (regcomp: Unmatched ( or \()'
bad_config '"roles": {"ln0": "a b"}' "roles[\"ln0\"]: expected a role name: 1 to 47 letters, digits, '_', '.' or '-' (attn_norm, mlp_norm, final_norm, ...)"
bad_config '"roles": {"ln0": 3}' "roles[\"ln0\"]: expected a role name: 1 to 47 letters, digits, '_', '.' or '-' (attn_norm, mlp_norm, final_norm, ...)"
bad_config '"roles": ["ln0"]' 'roles: expected an object {"REGEX": "role name", ...}'
bad_config '"alpha0": "paper"' 'alpha0: expected a number in [1e-06, 1e+06], or [attention-input norm, other norms] (two such numbers)'
bad_config '"alpha0": [0.8, 0]' 'alpha0: expected a number in [1e-06, 1e+06], or [attention-input norm, other norms] (two such numbers)'
bad_config '"alpha0": [0.8, 0.2, 0.1]' 'alpha0: expected a number in [1e-06, 1e+06], or [attention-input norm, other norms] (two such numbers)'
bad_config '"dropin": 1' 'dropin: expected true or false'

# ---- merge: a shard without its drop-in file, or with a file of another kind
cat >"$T/m.json" <<JSON
{"layers": [{"file": "$data/ln00_input.npy"}, {"file": "$data/ln05_input.npy"}],
 "jacobian": {"enabled": false}}
JSON
for k in 1 2; do
    run "$NC" run "$T/m.json" --shard $k/2 --out "$T/s$k" --quiet
    expect_status 0
done
run "$NC" merge "$T/merged" "$T/s1" "$T/s2" --quiet
expect_status 0
check "merged drop-in files hold both layers" /usr/bin/python3 -c "
import json, struct, sys
b = open('$T/merged/dropin_dyt.safetensors', 'rb').read()
h = json.loads(b[8:8 + struct.unpack('<Q', b[:8])[0]])
sys.exit(0 if [k for k in h if k != '__metadata__'] == ['ln00.alpha', 'ln00.weight',
          'ln00.bias', 'ln05.alpha', 'ln05.weight', 'ln05.bias'] else 1)"
cp "$T/s2/dropin_dyt.safetensors" "$T/keep.safetensors"
cp "$T/s2/dropin_dyisru.safetensors" "$T/s2/dropin_dyt.safetensors"
run "$NC" merge "$T/merged2" "$T/s1" "$T/s2" --quiet
expect_status 2
expect_err "normcmp: merge: $T/s2/dropin_dyt.safetensors: __metadata__: expected format 'normcmp-dropin 1' and surrogate 'dyt'"
expect_no_file "$T/merged2"
rm "$T/s2/dropin_dyt.safetensors"
run "$NC" merge "$T/merged2" "$T/s1" "$T/s2" --quiet
expect_status 2
expect_err "normcmp: merge: $T/s2/dropin_dyt.safetensors: cannot open drop-in file: No such file or directory"
expect_no_file "$T/merged2"

done_tests
