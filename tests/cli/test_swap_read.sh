# test_swap_read.sh - normcmp reads the swap test's results (docs/swap.md,
# "In normcmp's report"): found in the output folder (or named with
# --swap), shown per layer and for the run in report.json, the verdicts and
# the summary; marked stale when measured with other drop-in parameters;
# refused with one line naming the file and field when malformed; equal
# after run --shard and merge; index.html's loss-change columns and the
# swap-depth figure (also drawn by merge). The results file is written here from the
# drop-in files' own parameters (no PyTorch: the swap test itself is
# checked against PyTorch in tests/ref/test_swap.py).
. tests/cli/lib.sh

V="$PWD/data/vit4mnist"
IN="$V/ln00_input.npy $V/ln05_input.npy $V/ln11_input.npy"
cat >"$T/mkswap.py" <<'PY'
# mkswap.py OUT SWAP [stale]: a results file for OUT's layers, deltas made up
import json, struct, sys
out, dest = sys.argv[1], sys.argv[2]
stale = len(sys.argv) > 3
def params(surr, key):
    b = open(f"{out}/dropin_{surr}.safetensors", "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    got = {}
    for k, v in h.items():
        if k.endswith("." + key):
            a, e = v["data_offsets"]
            got[k[:-len(key) - 1]] = struct.unpack("<f", b[8 + n + a:8 + n + e])[0]
    return got
P = {"dyt": params("dyt", "alpha"), "dyt_alpha0": params("dyt_alpha0", "alpha"),
     "dyisru": params("dyisru", "C")}
rep = json.load(open(f"{out}/report.json"))
layers = []
for i, L in enumerate(rep["layers"]):
    m = L["name"]
    sw = {}
    for s, key in (("dyt", "alpha"), ("dyt_alpha0", "alpha"), ("dyisru", "C")):
        p = P[s][m] * (1.5 if stale and s == "dyt" and i == 1 else 1)
        sw[s] = {key: p, "loss": 0.4, "loss_se": 0.1, "delta": round(0.0125 * (i + 1), 6),
                 "delta_se": 0.003, "accuracy_delta": -0.01, "accuracy_delta_se": 0.005,
                 "status": "ok"}
    layers.append({"name": m, "role": L.get("role"), "depth": i, "swap": sw})
ent = {"loss": 0.9, "loss_se": 0.1, "delta": 0.5, "delta_se": 0.12, "accuracy_delta": -0.2,
       "accuracy_delta_se": 0.03, "status": "ok"}
json.dump({"format": "normcmp swap test", "version": 1, "tool": "test", "command": "x",
           "loss": {"name": "cross-entropy against the labels", "unit": "nats per example"},
           "examples": 64, "batch_size": 4, "batches": 16,
           "original": {"loss": 0.4, "loss_se": 0.1, "accuracy": 0.9, "accuracy_se": 0.03},
           "surrogates": ["dyt", "dyt_alpha0", "dyisru"], "layers": layers,
           "roles": [{"role": "unknown", "layers": [l["name"] for l in layers],
                      "swap": {s: ent for s in ("dyt", "dyt_alpha0", "dyisru")}}],
           "all": {"layers": [l["name"] for l in layers],
                   "swap": {s: ent for s in ("dyt", "dyt_alpha0", "dyisru")}}},
          open(dest, "w"), indent=1)
PY
field() { /usr/bin/python3 -c "import json; r = json.load(open('$1/report.json')); print($2)"; }

# found in the output folder: the second run shows it
run "$NC" fit $IN --out "$T/o" --no-jacobian --bootstrap 100 --quiet
expect_status 0
/usr/bin/python3 "$T/mkswap.py" "$T/o" "$T/o/swap.json"
run env COLUMNS=200 "$NC" fit $IN --out "$T/o" --no-jacobian --bootstrap 100
expect_status 0
expect_out_has "swap cost~se"
expect_out_has "+0.025~0.003"
cp "$T/.out" "$T/o.out"
check "the run's verdict says what replacing every norm costs" sh -c \
    "tr -s ' \n' '  ' <'$T/o.out' | grep -qF 'every norm replaced by its drop-in DyT costs +0.5 +- 0.12 nats per example'"
check "layers[].swap: the file's numbers, current" test "$(field "$T/o" "[(l['swap']['current'], l['swap']['dyt']['delta'], l['swap']['dyt']['delta_se'], l['swap']['unit']) for l in r['layers']]")" = \
    "[(True, 0.0125, 0.003, 'nats per example'), (True, 0.025, 0.003, 'nats per example'), (True, 0.0375, 0.003, 'nats per example')]"
check "swap: the run's block" test "$(field "$T/o" "(r['swap']['all']['dyt']['delta'], r['swap']['original']['accuracy'], r['swap']['current'], r['swap']['roles'][0]['layers'])")" = \
    "(0.5, 0.9, True, 3)"
check "the verdict says what replacing the layer alone costs" \
    test "$(field "$T/o" "r['run']['per_layer'][1]['verdict'].split('; ')[-1]")" = \
    "replacing it alone costs +0.025 +- 0.003 nats per example"
cp "$T/o/swap.json" "$T/good_swap.json"
# index.html: the loss changes as sortable columns, each cell the report's
# number with its standard error under it
/usr/bin/python3 - "$T/o" >"$T/.check" 2>&1 <<'PY'
import json, re, sys
d = sys.argv[1]
rep = json.load(open(d + "/report.json"))
page = open(d + "/index.html").read()
heads = re.findall(r'<th data-key="([a-z0-9_]+)"', page)
bad = [k for k in ("swap_dyt", "swap_alpha0", "swap_dyisru", "dropin_alpha", "removed",
                   "slope_ratio", "kind") if k not in heads]
rows = re.findall(r'<tr data-name="([^"]*)">(.*?)</tr>', page, re.S)
for (name, row), l in zip(rows, rep["layers"]):
    cells = re.findall(r'<td[^>]*?(?: data-v="([^"]*)")?[^>]*>(.*?)</td>', row, re.S)
    got = dict(zip(["index", "layer", "norm"] + heads[3:], cells))
    for key, surr in (("swap_dyt", "dyt"), ("swap_alpha0", "dyt_alpha0"), ("swap_dyisru", "dyisru")):
        v, text = got[key]
        want = l["swap"][surr]
        if float(v) != want["delta"] or f"&plusmn; {want['delta_se']:.2g}" not in text:
            bad.append(f"{name} {key}: {v} {text} vs {want['delta']} +- {want['delta_se']}")
    v, text = got["removed"]
    ci = l["bootstrap"]["residual_removed"]["ci95"]
    if abs(float(v) - l["bootstrap"]["residual_removed"]["value"]) > 1e-12 or \
            f"[{ci[0]:.4g}, {ci[1]:.4g}]" not in text:
        bad.append(f"{name} removed: {v} {text} vs {ci}")
print("ok" if not bad and len(rows) == 3 else f"{len(rows)} rows; " + "; ".join(bad))
PY
if grep -q '^ok' "$T/.check"; then _ok; else _bad "index.html swap columns: $(cat "$T/.check")"; fi
# swap-depth: drawn from the results; refused (one line) when there are none
run "$NC" plot $IN --out "$T/fig" --no-jacobian --bootstrap 0 --quiet --swap "$T/good_swap.json" \
    --figure swap-depth --size 3.3x2.5
expect_status 0
expect_file "$T/fig/swap_depth.png"
check "swap-depth: one bar per layer and surrogate, the run's all-replaced cost in its note" \
    /usr/bin/python3 -c "
from PIL import Image
im = Image.open('$T/fig/swap_depth.png')
lay = im.info['Layout']
assert '95 % bars; all replaced (DyT): +0.5 \u00b1 0.12 SE' in lay, lay
"
run "$NC" plot $IN --out "$T/fig2" --no-jacobian --bootstrap 0 --quiet --figure swap-depth
expect_status 2
expect_err_has "figure 'swap-depth': no selected layer has swap test results (scripts/swap_test.py, then --swap FILE; docs/swap.md)"
expect_no_file "$T/fig2"

# measured with other drop-ins: reported, marked stale
/usr/bin/python3 "$T/mkswap.py" "$T/o" "$T/o/swap.json" stale
run "$NC" fit $IN --out "$T/o" --no-jacobian --bootstrap 100 --verbose
expect_status 0
expect_out_has "(swap test of other drop-ins: rerun it)"
check "stale: current false" test "$(field "$T/o" "(r['swap']['current'], r['layers'][0]['swap']['current'])")" = "(False, False)"

# named with --swap; a malformed file is refused, naming file and field
run "$NC" fit $IN --out "$T/o2" --no-jacobian --bootstrap 0 --quiet --swap "$T/good_swap.json"
expect_status 0
check "--swap: read" test "$(field "$T/o2" "r['swap']['file']")" = "$T/good_swap.json"
sed 's/"delta": 0.025,/"delta": "x",/' "$T/good_swap.json" >"$T/bad.json"
run "$NC" fit $IN --out "$T/o3" --no-jacobian --quiet --swap "$T/bad.json"
expect_status 2
expect_err "normcmp: $T/bad.json: layers[1].swap.dyt.delta: expected a finite number or null (docs/swap.md)"
expect_no_file "$T/o3"
sed 's/"version": 1,/"version": 2,/' "$T/good_swap.json" >"$T/v2.json"
run "$NC" fit $IN --out "$T/o3" --no-jacobian --quiet --swap "$T/v2.json"
expect_status 2
expect_err "normcmp: $T/v2.json: version: expected 1 (this normcmp reads version 1) (docs/swap.md)"
run "$NC" fit $IN --out "$T/o3" --no-jacobian --quiet --swap "$T/nope.json"
expect_status 2
expect_err_has "$T/nope.json: cannot open swap test results file"

# run --shard and merge: the same report as one run
cat >"$T/c.json" <<JSON
{"name": "sw", "swap": "$T/good_swap.json", "bootstrap": 100, "jacobian": {"enabled": false},
 "figures": [{"type": "alpha-std"}, {"type": "swap-depth"}],
 "layers": [{"file": "$V/ln00_input.npy"}, {"file": "$V/ln05_input.npy"}, {"file": "$V/ln11_input.npy"}]}
JSON
run "$NC" run "$T/c.json" --out "$T/full" --quiet
expect_status 0
run "$NC" run "$T/c.json" --out "$T/s1" --shard 1/2 --quiet
expect_status 0
run "$NC" run "$T/c.json" --out "$T/s2" --shard 2/2 --quiet
expect_status 0
run "$NC" merge "$T/m" "$T/s1" "$T/s2" --quiet
expect_status 0
run /usr/bin/python3 tests/cli/merge_compare.py "$T/full" "$T/m"
expect_status 0
expect_out_has ok
# merge draws swap-depth from the shards' reports: the same pixels as one run
check "merge: swap-depth as one run draws it" /usr/bin/python3 -c "
from PIL import Image
a, b = (Image.open(f'{d}/swap_depth.png') for d in ('$T/full', '$T/m'))
assert a.size == b.size and a.tobytes() == b.tobytes()
"

done_tests
