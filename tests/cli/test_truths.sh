# test_truths.sh - small truths (issue 9 section 6, issue 13): the report's
# effective configuration shows the values used, settings that cannot be
# honoured are refused naming the file and key path, and a figure whose
# layers match nothing is refused when the plan is built (before analysis).
. tests/cli/lib.sh
PY=/usr/bin/python3
X=data/vit4mnist/ln00_input.npy

# the effective configuration: defaults resolved (8 probes, the threads
# used); the dense check's default sample is sized to each layer (about N d
# entries: 2040 x 64 / 64^2 = 31 tokens here), named as a rule in the
# config and counted in the layer's dense_check
run "$NC" fit "$X" -o "$T/o1" -q
expect_status 0
run $PY -c "import json; r = json.load(open('$T/o1/report.json')); c = r['config']; j = c['jacobian']; print(j['probes'], j['dense_tokens'], c['threads'] > 0, j['probes'] == r['layers'][0]['jacobian']['probes'], r['layers'][0]['jacobian']['dense_check']['tokens'], 'dense_tokens_rule' in j and 'status' in j)"
if [ "$(cat "$T/.out")" = "8 None True True 31 True" ]; then _ok; else _bad "effective config: $(cat "$T/.out")"; fi
# a short, wide layer (16 tokens of 512): its one token's 512^2 entries
# exceed its 8192 points, so it gets 8 x 16 / 512 -> 1 probe column
"$NC" synth -o "$T/wide.npy" --tokens 16 --dim 512 >/dev/null
run "$NC" fit "$T/wide.npy" -o "$T/ow" -q
expect_status 0
run $PY -c "import json; j = json.load(open('$T/ow/report.json'))['layers'][0]['jacobian']; print(j['probes'], j['dense_check']['tokens'], j['dense_check']['columns'], j['dense_check']['status'])"
if [ "$(cat "$T/.out")" = "1 1 1 ok" ]; then _ok; else _bad "short wide layer's dense check: $(cat "$T/.out")"; fi
run "$NC" fit "$X" -o "$T/o2" -q --probes 3 --dense-tokens 5 --threads 1
run $PY -c "import json; c = json.load(open('$T/o2/report.json'))['config']; print(c['jacobian']['probes'], c['jacobian']['dense_tokens'], c['threads'])"
if [ "$(cat "$T/.out")" = "3 5 1" ]; then _ok; else _bad "given config: $(cat "$T/.out")"; fi

# dyt_per_channel cannot be drawn as one curve: refused, not ignored
cat >"$T/c.json" <<JSON
{"name": "c", "layers": [{"file": "$PWD/$X"}],
 "figures": [{"type": "scatter", "curves": ["dyt", "dyt_per_channel"]}]}
JSON
run "$NC" run "$T/c.json" -o "$T/o3" -q
expect_status 2
expect_err "normcmp: $T/c.json: figures[0].curves[1]: expected a fit drawn as one curve (dyt_per_channel has a gamma_i, beta_i per channel: it is in the report, not in figures)"
expect_no_file "$T/o3"
run "$NC" plot "$X" --figure scatter --curves dyt,dyt_per_channel -o "$T/o4" -q
expect_status 2
expect_err_has "--curves: dyt_per_channel"

# a figure's layer pattern that matches nothing: refused before any analysis
cat >"$T/d.json" <<JSON
{"name": "d", "layers": [{"file": "$PWD/$X"}],
 "figures": [{"type": "scatter", "layers": ["ln00", "ln99"]}]}
JSON
run "$NC" run "$T/d.json" -o "$T/o5"
expect_status 2
expect_err "normcmp: $T/d.json: figures[0].layers[1]: 'ln99' matches no layer (the layers: ln00)"
expect_no_file "$T/o5"
run "$NC" plot "$X" --figure scatter --layer 'nothing*' -o "$T/o6"
expect_status 2
expect_err "normcmp: --layer 'nothing*' matches no layer (the layers: ln00)"
done_tests
