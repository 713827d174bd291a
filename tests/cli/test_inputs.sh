# test_inputs.sh - inputs that must be refused, never waited on or
# destroyed: a FIFO as input or config (exit 2 at once, not a hang), an
# output that would replace an input (exit 2, the input intact), invalid
# UTF-8 in names (exit 2 naming file and field; file names escaped so
# report.json stays strict UTF-8 JSON), lenient safetensors and configs;
# and forgiving ones: a wrong kind of file named with what to run instead,
# norm names in any spelling, config keys with a did-you-mean, comments.
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

# --- invalid UTF-8: refused in safetensors names and config strings
# (naming the file and the field); a file name is escaped as \xNN so
# report.json stays strict UTF-8 JSON
/usr/bin/python3 - <<'PYEOF'
import json, struct
def st(name, h, data):
    hb = h if isinstance(h, bytes) else json.dumps(h).encode()
    open(name, "wb").write(struct.pack("<Q", len(hb)) + hb + data)
a = bytes(32)  # a [2, 4] float32 tensor of zeros
st("badname.safetensors", b'{"a\xffb.input":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}', a)
st("hole.safetensors", {"a.input": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 32]},
                        "b.input": {"dtype": "F32", "shape": [2, 4], "data_offsets": [40, 72]}},
   a + b"\0" * 8 + a)
st("trail.safetensors", {"a.input": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 32]}},
   a + b"junk")
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 0), }"
hdr += " " * (64 - 10 - len(hdr) % 64 - 1) + "\n"
open("huge.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
open("badlabel.json", "wb").write(b'{"layers": [{"synth": {"preset": "late", "tokens": 8, '
                                  b'"dim": 4}, "label": "a\xffb"}]}')
open("nul.json", "wb").write(b'{"layers": [{"synth": {"preset": "late", "tokens": 8, '
                             b'"dim": 4}}]\0}')
open("escape.json", "w").write('{"name": "../../escaped", "layers": [{"synth": '
                               '{"preset": "late", "tokens": 8, "dim": 4}}]}')
PYEOF
run "$NC" inspect badname.safetensors
expect_status 2
expect_err "normcmp: badname.safetensors: tensor 'a?b.input': name: found byte 0xff at position 1 that is not UTF-8, expected a UTF-8 name"
run "$NC" run badlabel.json --out o --quiet
expect_status 2
expect_err "normcmp: badlabel.json: layers[0].label: found byte 0xff at position 1 that is not UTF-8, expected UTF-8 text"
expect_no_file o
name=$(printf 'n\377m.npy')
cp x.npy "$name"
run "$NC" fit "$name" --out u --quiet
expect_status 0
cat >strict.py <<'PYEOF'
import json
j = json.loads(open("u/report.json", "rb").read().decode("utf-8", "strict"))
assert j["inputs"][0]["path"] == "n\\xffm.npy", j["inputs"][0]["path"]
PYEOF
check "report.json is strict UTF-8 JSON with the file name escaped" /usr/bin/python3 strict.py

# --- lenient parsing: holes and trailing bytes in safetensors, a NUL for a
# closing brace in a config, a shape of 2^40 empty tokens
run "$NC" fit hole.safetensors --out o --quiet
expect_status 2
expect_err "normcmp: hole.safetensors: tensor 'b.input': data_offsets [40, 72]: found a gap at offset 32 of the data section, expected each tensor to begin where the previous one ends"
run "$NC" fit trail.safetensors --out o --quiet
expect_status 2
expect_err "normcmp: trail.safetensors: found 4 bytes after the last tensor's data (offset 32 of the data section), expected the tensors to cover it to the end of the file"
run "$NC" run nul.json --out o --quiet
expect_status 2
expect_err_has "normcmp: nul.json: malformed JSON at line 1, column"
run "$NC" fit huge.npy --out o --quiet
expect_status 2
expect_err "normcmp: huge.npy: header field 'shape': found [1099511627776, 0], 1099511627776 tokens without data, expected at most 16777216 tokens for a tensor with no elements"
expect_no_file o

# --- a config name that would put the default output folder elsewhere
mkdir -p deep/er
run sh -c "cd deep/er && exec '$NC' run ../../escape.json --quiet"
expect_status 2
expect_err "normcmp: ../../escape.json: name: expected a name without '/' (not '.' or '..'); the output folder is out/<name>, or set \"output\""
expect_no_file deep/escaped
expect_no_file deep/er/out

# --- the wrong kind of file: say what it is and what to run instead
printf '{"name": "mine", "layers": [{"file": "x.npy"}]}\n' >mine.json
run "$NC" fit mine.json --out o --quiet
expect_status 2
expect_err 'normcmp: mine.json: a normcmp config (it has "layers"), not a dump: run it with normcmp run mine.json'
expect_no_file o
for e in pt pth ckpt; do
    printf 'not activations at all' >"m.$e"
    run "$NC" fit "m.$e" --out o --quiet
    expect_status 2
    expect_err "normcmp: m.$e: a PyTorch model or checkpoint (.pt, .pth, .ckpt), not activations: dump its norm layers' activations first: python3 scripts/dump_activations.py --checkpoint m.$e --inputs FILE.py:MAKE -o out/acts.safetensors (or --input-shape D0,D1,... for random inputs; weights alone also need --model FILE.py:BUILD; installed as normcmp-dump; docs/dumping.md), then normcmp fit out/acts.safetensors"
done
printf 'PK\003\004 a zip, as torch.save writes' >weights.data
printf 'not activations at all' >m.PTL
printf 'not activations at all' >m.bin
run "$NC" fit weights.data --out o --quiet
expect_status 2
expect_err_has "normcmp: weights.data: a PyTorch model or checkpoint (a zip archive or a pickle, as torch.save writes), not activations: dump"
run "$NC" inspect m.PTL
expect_status 2
expect_err_has "normcmp: m.PTL: a TorchScript model (.ptl), not activations: dump its norm layers' activations first: python3 scripts/dump_activations.py --checkpoint m.PTL --inputs"
run "$NC" fit m.bin --out o --quiet
expect_status 2
expect_err_has "normcmp: m.bin: model weights (.bin: a PyTorch or llama2.c checkpoint), not activations: dump"
printf '1,2,3\n4,5,6\n' >t.csv
run "$NC" fit t.csv --out o --quiet
expect_status 2
expect_err "normcmp: t.csv: a text table (.csv), not a dump: save the activations (a row per token, a column per channel) as .npy, python3 -c \"import numpy as np; np.save('x.npy', np.loadtxt('t.csv', delimiter=',', ndmin=2, dtype=np.float32))\", then normcmp fit x.npy"
expect_no_file o
# ... and the command it shows works as printed (NumPy: skipped without it)
if have_py numpy; then
    mkdir csv && (cd csv && /usr/bin/python3 -c "import numpy as np; np.save('x.npy', np.loadtxt('../t.csv', delimiter=',', ndmin=2, dtype=np.float32))")
    run "$NC" inspect csv/x.npy
    expect_status 0
    expect_out_has "[2,3]"
else
    skip "the CSV message's command" python3-numpy
fi

# --- norm names as PyTorch and the papers write them, in flags and configs
for n in RMSNorm rms_norm LayerNorm layer_norm LAYERNORM rms-norm; do
    run "$NC" fit x.npy --norm "$n" --out "o_$n" --quiet --no-jacobian
    expect_status 0
done
norms() { /usr/bin/python3 -c "import json, sys; print(*[l['norm'] for l in json.load(open(sys.argv[1]))['layers']])" "$1"; }
run norms o_RMSNorm/report.json
expect_out_has "rmsnorm"
run norms o_layer_norm/report.json
expect_out_has "layernorm"
printf '{"name": "n", "norm": "RMSNorm", "jacobian": {"enabled": false},\n "layers": [{"file": "x.npy", "norm": "Layer_Norm"}, {"file": "x.npy", "label": "y"}]}\n' >normnames.json
run "$NC" run normnames.json --out o_n --quiet
expect_status 0
run norms o_n/report.json
expect_out_has "layernorm rmsnorm"
run "$NC" fit x.npy --norm batchnorm --out o --quiet
expect_status 2
expect_err "normcmp: fit: --norm: expected layernorm or rmsnorm (any case, e.g. LayerNorm, rms_norm), got 'batchnorm' (see 'normcmp fit --help')"
printf '{"name": "n", "norm": "BatchNorm", "layers": [{"file": "x.npy"}]}\n' >badnorm.json
run "$NC" run badnorm.json --out o --quiet
expect_status 2
expect_err 'normcmp: badnorm.json: norm: expected "layernorm" or "rmsnorm" (any case, e.g. "LayerNorm", "rms_norm")'

# --- config keys get the options' did-you-mean
printf '{"name": "k", "layers": [{"file": "x.npy"}], "figure": [{"type": "scatter"}]}\n' >typo.json
run "$NC" run typo.json --out o --quiet
expect_status 2
expect_err "normcmp: typo.json: figure: unknown key (did you mean figures? expected one of: name, output, norm, eps, fits, amplitude, bins, max_exact_points, sample_tokens, seed, threads, jacobian, figures, sweep, layers, bootstrap, token_block, dropin, alpha0, roles, swap)"
printf '{"name": "k", "layers": [{"file": "x.npy", "lable": "a"}]}\n' >typo2.json
run "$NC" run typo2.json --out o --quiet
expect_status 2
expect_err_has "normcmp: typo2.json: layers[0].lable: unknown key (did you mean label? expected one of: file,"
printf '{"name": "k", "layers": [{"file": "x.npy"}], "zzz": 1}\n' >typo3.json
run "$NC" run typo3.json --out o --quiet
expect_status 2
expect_err "normcmp: typo3.json: zzz: unknown key (expected one of: name, output, norm, eps, fits, amplitude, bins, max_exact_points, sample_tokens, seed, threads, jacobian, figures, sweep, layers, bootstrap, token_block, dropin, alpha0, roles, swap)"

# --- a comment in a config: JSON has none
printf '{\n  "name": "c", // my run\n  "layers": [{"file": "x.npy"}]\n}\n' >comment.json
run "$NC" run comment.json --out o --quiet
expect_status 2
expect_err "normcmp: comment.json: malformed JSON at line 2, column 16: a comment ('//'); JSON has no comments (remove it)"
printf '{\n  "name": "c",\n  /* the layers */ "layers": [{"file": "x.npy"}]\n}\n' >comment2.json
run "$NC" run comment2.json --out o --quiet
expect_status 2
expect_err "normcmp: comment2.json: malformed JSON at line 3, column 3: a comment ('/*'); JSON has no comments (remove it)"
printf '{"name": "a//b", "layers": [{"file": "x.npy"}],}\n' >nocomment.json
run "$NC" run nocomment.json --out o --quiet
expect_status 2
expect_err "normcmp: nocomment.json: malformed JSON at line 1, column 49"
expect_no_file o

cd /
done_tests
