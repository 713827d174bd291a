# test_globs.sh - what people type first: a shell glob of a dump folder
# with its companions (data/vit4mnist/*.npy), the folder itself, and
# one-dimensional files among inputs. Companions go with their layer, a
# 1-D file is no layer among others, and the run is the three-layer run
# (same layers, same numbers, same run-level slopes); no verdict prints a
# non-finite percent.
. tests/cli/lib.sh

V="$PWD/data/vit4mnist"
same_run() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
def load(p):
    r = json.load(open(p))
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("timing", "source")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(r["layers"]), strip(r["run"])
sys.exit(0 if load(sys.argv[1]) == load(sys.argv[2]) else 1)
PY
}

run "$NC" fit "$V/ln00_input.npy" "$V/ln05_input.npy" "$V/ln11_input.npy" --out "$T/three" \
    --no-jacobian --bootstrap 100
expect_status 0

# the glob the shell gives for data/vit4mnist/*.npy: 12 files, 3 layers
run "$NC" fit "$V"/*.npy --out "$T/glob" --no-jacobian --bootstrap 100 --verbose
expect_status 0
expect_err_has "normcmp: 9 companion files (_output, _weight, _bias, _grad_output.npy beside a layer's _input.npy) go with their layers, not analysed as layers"
check "the glob: 3 layers" test "$(grep -c 'removes' "$T/.out")" -eq 3
check "the glob: no non-finite percent" sh -c "! grep -E 'inf%|nan%' '$T/glob/../glob/report.json' '$T/.out'"
check "the glob: the same layers, numbers and run block as the three inputs" \
    same_run "$T/three/report.json" "$T/glob/report.json"
check "the glob: companions read as companions" /usr/bin/python3 -c "
import json, sys
r = json.load(open('$T/glob/report.json'))
roles = sorted((i['layer'], i['role']) for i in r['inputs'])
want = sorted((l, k) for l in ('ln00', 'ln05', 'ln11') for k in ('input', 'output', 'weight', 'bias'))
sys.exit(0 if roles == want else 1)"

# the folder itself: its .npy files, the same run
run "$NC" fit "$V" --out "$T/folder" --no-jacobian --bootstrap 100 --quiet
expect_status 0
check "the folder: the same as the three inputs" same_run "$T/three/report.json" "$T/folder/report.json"

# a one-dimensional file among layers is left out and said; alone, it is analysed
cp "$V/ln00_weight.npy" "$T/w.npy"
run "$NC" fit "$V/ln00_input.npy" "$T/w.npy" --out "$T/one" --no-jacobian --bootstrap 0 --verbose
expect_status 0
expect_err_has "left out, one-dimensional (a weight or bias; name one alone to analyse it as one token): $T/w.npy"
check "1-D among others: one layer" test "$(grep -c 'removes' "$T/.out")" -eq 1
run "$NC" fit "$T/w.npy" --out "$T/alone" --no-jacobian --quiet
expect_status 0
check "1-D alone: analysed (one token)" /usr/bin/python3 -c "
import json, sys
sys.exit(0 if json.load(open('$T/alone/report.json'))['layers'][0]['tokens'] == 1 else 1)"

# a companion whose input is not among the files stays a layer (and is warned about)
run "$NC" fit "$V/ln00_output.npy" --out "$T/out_only" --no-jacobian --bootstrap 0
expect_status 0
expect_err_has "norm's output, not its input"

# the default output: a summary that fits the terminal (COLUMNS when stdout
# is not one), a line per layer, the run's verdict, where index.html is;
# --json: the report itself on stdout
for cols in 80 60; do
    run env COLUMNS=$cols "$NC" fit "$V"/ln*_input.npy --out "$T/brief$cols" --no-jacobian \
        --bootstrap 200
    expect_status 0
    expect_out_has "Run: 3 of 3 layers"
    cp "$T/.out" "$T/brief.out"
    check "$cols columns: no line wider" awk -v w=$cols 'length($0) > w { bad = 1 } END { exit bad }' "$T/brief.out"
    check "$cols columns: a line per layer with its label" \
        test "$(grep -cE '^ln(00|05|11) +(saturating|near-linear|undecided|strongly saturating) ' "$T/brief.out")" -eq 3
    check "$cols columns: says where index.html is" grep -q "$T/brief$cols/index.html" "$T/brief.out"
    check "$cols columns: at most 28 lines" test "$(wc -l <"$T/brief.out")" -le 28
done
# Hugging Face names at 80 columns: the prefix they share goes (said once),
# so layer 0 and layer 1 stay two different rows
/usr/bin/python3 - "$T/hf.safetensors" <<'PY'
import json, struct, sys
import random
random.seed(3)
names = [f"model.layers.{k}.{r}" for k in range(3)
         for r in ("input_layernorm", "post_attention_layernorm")]
hdr, data = {}, b""
for n in names:
    a = struct.pack("<%df" % (64 * 16), *(random.gauss(0, 1) for _ in range(64 * 16)))
    hdr[n + ".input"] = {"dtype": "F32", "shape": [64, 16], "data_offsets": [len(data), len(data) + len(a)]}
    data += a
h = json.dumps(hdr).encode()
h += b" " * ((8 - len(h) % 8) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
run env COLUMNS=80 "$NC" fit "$T/hf.safetensors" --out "$T/hf" --no-jacobian --bootstrap 0
expect_status 0
expect_out_has 'layer names below follow "model.layers."'
cp "$T/.out" "$T/hf.out"
check "long names: every layer's row starts differently" sh -c \
    "grep -E '^[0-2]\.(input|post)' '$T/hf.out' | cut -c1-26 | sort -u | wc -l | grep -qx 6"
run "$NC" fit "$V"/ln*_input.npy --out "$T/json" --no-jacobian --bootstrap 50 --json
expect_status 0
cp "$T/.out" "$T/json.out"
check "--json: stdout is the report" cmp "$T/json.out" "$T/json/report.json"


# Exact tensor names in a config (the dump script's configs, issue 24 item
# 9): the glob characters escaped with a backslash select exactly their
# tensor, and a pattern ending in ".input" names tensors only, so module
# "a" is not also module "a.input" (whose input is "a.input.input").
/usr/bin/python3 - "$T/names.safetensors" "$T/names.json" <<'PY'
import json, random, struct, sys
random.seed(9)
mods = ["ln\\back", "ln[0]", "ln0", "x*y", "xzy", "q?", "a", "a.input"]
hdr, data = {}, b""
for m in mods:
    a = struct.pack("<%df" % (64 * 8), *(random.gauss(0, 1) for _ in range(64 * 8)))
    hdr[m + ".input"] = {"dtype": "F32", "shape": [64, 8], "data_offsets": [len(data), len(data) + len(a)]}
    data += a
h = json.dumps(hdr).encode()
h += b" " * ((8 - len(h) % 8) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
esc = lambda s: "".join("\\" + c if c in "*?[\\" else c for c in s)
json.dump({"name": "names", "layers": [{"file": "names.safetensors", "tensor": esc(m + ".input"),
                                        "norm": "layernorm"} for m in mods]},
          open(sys.argv[2], "w"))
PY
run "$NC" run "$T/names.json" --out "$T/names" --bootstrap 0 -q
expect_status 0
check "escaped exact names: one layer each, in order" /usr/bin/python3 -c "
import json, sys
got = [L['name'] for L in json.load(open('$T/names/report.json'))['layers']]
sys.exit(0 if got == ['ln\\\\back', 'ln[0]', 'ln0', 'x*y', 'xzy', 'q?', 'a', 'a.input'] else print(got) or 1)"
run "$NC" fit "$T/names.safetensors" --tensor a.input --out "$T/names1" --no-jacobian --bootstrap 0 -q
expect_status 0
check "--tensor a.input: module a only" /usr/bin/python3 -c "
import json, sys
got = [L['name'] for L in json.load(open('$T/names1/report.json'))['layers']]
sys.exit(0 if got == ['a'] else print(got) or 1)"
run "$NC" fit "$T/names.safetensors" --tensor 'a*' --out "$T/names2" --no-jacobian --bootstrap 0 -q
expect_status 0
check "--tensor 'a*': modules a and a.input (a module name glob as before)" /usr/bin/python3 -c "
import json, sys
got = [L['name'] for L in json.load(open('$T/names2/report.json'))['layers']]
sys.exit(0 if got == ['a', 'a.input'] else print(got) or 1)"

done_tests
