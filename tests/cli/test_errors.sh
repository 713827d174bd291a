# test_errors.sh - every class of bad input: exit status 2, one line on
# stderr naming the file, the field and what was expected, and no report or
# partial output left behind.
. tests/cli/lib.sh

OUT="$T/out"
good="$PWD/data/vit4mnist/ln00_input.npy"

# crafted files (python only writes the bytes; normcmp reads them)
/usr/bin/python3 - "$T" <<'PY'
import json, struct, sys
t = sys.argv[1]
def npy(header, data=b"", version=(1, 0)):
    h = header.encode()
    pad = (64 - (10 + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack("<H", len(h)) + h + data
def st(header, data=b""):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data
files = {
    "empty.npy": b"",
    "badmagic.npy": b"PK\x03\x04" + b"\0" * 60,
    "truncated.npy": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }", b"\0" * 100),
    "hdrlen.npy": b"\x93NUMPY\x01\x00" + struct.pack("<H", 60000) + b"{" * 20,
    "int.npy": npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }", b"\0" * 32),
    "bigendian.npy": npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", b"\0" * 16),
    "fortran.npy": npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", b"\0" * 16),
    "overflow.npy": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
    "range.safetensors": st({"a.input": {"dtype": "F32", "shape": [4, 8], "data_offsets": [0, 128]}}, b"\0" * 100),
    "overlap.safetensors": st({"a.input": {"dtype": "F32", "shape": [2, 8], "data_offsets": [0, 64]},
                               "b.input": {"dtype": "F32", "shape": [2, 8], "data_offsets": [32, 96]}}, b"\0" * 96),
    "hugeheader.safetensors": struct.pack("<Q", 5 << 30) + b"{}",
    "i64.safetensors": st({"a.input": {"dtype": "I64", "shape": [2, 2], "data_offsets": [0, 32]}}, b"\0" * 32),
    "bad.json": b'{"layers": [ {"file": "x.npy",, } ]}',
    "unknown.json": json.dumps({"layers": [{"file": "a.npy"}, {"file": "b.npy"}, {"file": "c.npy", "epss": 1e-5}]}).encode(),
    "mistyped.json": json.dumps({"layers": [{"file": "a.npy"}, {"file": "b.npy"}, {"file": "c.npy", "eps": "small"}]}).encode(),
    "nolayers.json": json.dumps({"name": "x"}).encode(),
    "rawctl.json": b'{"layers": [{"file": "a\x00b.npy"}]}',
    "nulname.safetensors": b"",
}
h = b'{"a\x00b": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]}}'
files["nulname.safetensors"] = struct.pack("<Q", len(h)) + h + b"\0" * 8
for name, data in files.items():
    with open(f"{t}/{name}", "wb") as f:
        f.write(data)
PY

# $1 file, $2 exact message (without "normcmp: ")
bad_fit() {
    run "$NC" fit "$1" --out "$OUT" --quiet
    expect_status 2
    expect_err "normcmp: $2"
    expect_no_file "$OUT/report.json"
    expect_no_file "$OUT"
}

bad_fit "$T/missing.npy" "$T/missing.npy: cannot open input file: No such file or directory"
bad_fit "$T/empty.npy" "$T/empty.npy: empty file, expected a .npy or .safetensors file"
bad_fit "$T/badmagic.npy" "$T/badmagic.npy: unknown format: expected a .npy file (magic \\x93NUMPY) or a safetensors file (8-byte header length, then '{')"
bad_fit "$T/truncated.npy" "$T/truncated.npy: data truncated: expected 128 bytes for F32 [4, 8] at offset 128, found 100"
run "$NC" fit "$T/hdrlen.npy" --out "$OUT" --quiet
expect_status 2
expect_err_has "hdrlen.npy: header length at offset 8: found 60000 bytes, expected at most"
bad_fit "$T/int.npy" "$T/int.npy: header field 'descr': unsupported dtype '<i8' (expected float32, float16, float64 or bfloat16)"
bad_fit "$T/bigendian.npy" "$T/bigendian.npy: header field 'descr': found big-endian '>f4', expected little-endian '<f4' (save with arr.astype('<f4'))"
bad_fit "$T/fortran.npy" "$T/fortran.npy: header field 'fortran_order': found True, expected False (Fortran order is not supported; save with np.ascontiguousarray)"
run "$NC" fit "$T/overflow.npy" --out "$OUT" --quiet
expect_status 2
expect_err_has "overflow.npy: header field 'shape': found [4294967296, 4294967296], too many elements"
bad_fit "$T/range.safetensors" "$T/range.safetensors: tensor 'a.input': data_offsets [0, 128]: found end past the data section, expected at most 100 (data start at offset 80)"
bad_fit "$T/overlap.safetensors" "$T/overlap.safetensors: tensor 'b.input': data_offsets [32, 96]: found overlap with tensor 'a.input' [0, 64], expected disjoint ranges"
run "$NC" fit "$T/hugeheader.safetensors" --out "$OUT" --quiet
expect_status 2
expect_err_has "hugeheader.safetensors: header length at offset 0: found 5368709120 bytes"
bad_fit "$T/i64.safetensors" "$T/i64.safetensors: tensor 'a.input': dtype I64 is not supported as input (expected F32, F16, BF16 or F64)"

# a companion that does not fit the input
/usr/bin/python3 -c "import sys; sys.path.insert(0, 'tests/cli'); import npyw; npyw.save_npy('$T/cm_input.npy', [[1.0] * 9] * 4); npyw.save_npy('$T/cm_output.npy', [[1.0] * 8] * 4)"
bad_fit "$T/cm_input.npy" "$T/cm_output.npy: tensor 'cm_output': output of layer 'cm' has shape [4, 8], expected the same tokens and channels for its input of shape [4, 9]"

# tensor pattern matching nothing
run "$NC" synth -o "$T/three.safetensors" --preset all --tokens 16 --dim 8
expect_status 0
run "$NC" fit "$T/three.safetensors" --tensor 'blocks.*' --out "$OUT" --quiet
expect_status 2
expect_err "normcmp: $T/three.safetensors: tensor pattern 'blocks.*' matches no tensor (--tensor; layers in the file: early, middle, late; \`normcmp inspect $T/three.safetensors\` lists every tensor)"
expect_no_file "$OUT"

# configs: malformed JSON, unknown key, wrong type, missing section
bad_run() {
    run "$NC" run "$1" --out "$OUT" --quiet
    expect_status 2
    expect_err "normcmp: $2"
    expect_no_file "$OUT"
}
bad_run "$T/bad.json" "$T/bad.json: malformed JSON at line 1, column 32"
bad_run "$T/unknown.json" "$T/unknown.json: layers[2].epss: unknown key (did you mean eps? expected one of: file, synth, tensor, label, norm, eps, output, weight, bias, grad_output, experiment, token_block, group)"
bad_run "$T/mistyped.json" "$T/mistyped.json: layers[2].eps: expected a number in [0, 1]"
bad_run "$T/nolayers.json" "$T/nolayers.json: layers: missing (expected an array of layers)"
bad_run "$T/rawctl.json" "$T/rawctl.json: malformed JSON at line 1, column 24: a raw control character (byte 0x00) inside a string (write it escaped)"
# the escape \u0000 would cut the string short ("x\u0000.npy" read as "x")
printf '{"name": "n", "layers": [{"file": "x\\u0000.npy"}]}' >"$T/escnul.json"
bad_run "$T/escnul.json" "$T/escnul.json: malformed JSON at line 1, column 37: the escape \\u0000 (a NUL character) inside a string, expected text without NUL"
bad_fit "$T/nulname.safetensors" "$T/nulname.safetensors: header at offset 11: found byte 0x00 inside a string, expected control characters escaped (JSON)"
bad_run "$T/nothere.json" "$T/nothere.json: cannot open config file: No such file or directory"

# output folder not writable: a regular file in the way, and (as an
# unprivileged user, since root ignores permissions) a read-only folder
touch "$T/afile"
run "$NC" fit "$good" --out "$T/afile/sub" --quiet
expect_status 2
expect_err "normcmp: $T/afile/sub: cannot create output folder: Not a directory"
# a name over the 255-byte limit is the user's to fix (exit 2), for the
# output folder and for a file's own name
long=$(printf 'x%.0s' $(seq 256))
run "$NC" fit "$good" --out "$T/$long" --quiet
expect_status 2
expect_err "normcmp: $T/$long: cannot use output folder: File name too long"
run "$NC" norm "$good" -o "$T/$long.npy"
expect_status 2
expect_err "normcmp: $T/$long.npy: file name longer than 255 bytes"
long=$(printf 'y%.0s' $(seq 255)) # the longest name is fine
run "$NC" norm "$good" -o "$T/$long"
expect_status 0
expect_file "$T/$long"
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    mkdir -p "$T/ro" && chmod 555 "$T/ro" && chmod 755 "$T"
    cp "$good" "$T/ro_input.npy" && chmod 644 "$T/ro_input.npy"
    run setpriv --reuid=65534 --regid=65534 --clear-groups "$NC" fit "$T/ro_input.npy" --out "$T/ro/x" --quiet
    expect_status 2
    expect_err "normcmp: $T/ro/x: cannot create output folder: Permission denied"
fi

# bad flags
run "$NC" fit "$good" --eps 1e --out "$OUT"
expect_status 2
expect_err "normcmp: fit: --eps: expected a number in [0, 1], got '1e' (see 'normcmp fit --help')"
run "$NC" fit "$good" --norm batchnorm --out "$OUT"
expect_status 2
expect_err "normcmp: fit: --norm: expected layernorm or rmsnorm (any case, e.g. LayerNorm, rms_norm), got 'batchnorm' (see 'normcmp fit --help')"
run "$NC" frobnicate
expect_status 2
expect_err_has "unknown command 'frobnicate'"
expect_no_file "$OUT"

done_tests
