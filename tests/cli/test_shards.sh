# test_shards.sh - a dump spread over several safetensors files, read as it
# comes: `normcmp fit` on a folder, an index (*.safetensors.index.json) and
# a glob of shards gives the same layers, companions and numbers as the
# same tensors in one file; bad indexes and shard sets fail with one line
# and exit 2.
. tests/cli/lib.sh

# three layers with their companions (output, weight, bias), one file
run "$NC" synth -o "$T/one.safetensors" --preset all --affine --tokens 300 --dim 48
expect_status 0

# the same tensors in three shards, each layer's input in one shard and its
# companions spread over the others (the python writes bytes only)
mkdir -p "$T/sh"
/usr/bin/python3 - "$T" <<'PY'
import json, struct, sys
t = sys.argv[1]
raw = open(f"{t}/one.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
meta = hdr.pop("__metadata__", None)
data = raw[8 + n:]
names = list(hdr)
shards = [[], [], []]
for k, name in enumerate(names):
    shards[k % 3].append(name)
wm = {}
for s, members in enumerate(shards):
    fn = f"model-{s + 1:05d}-of-00003.safetensors"
    h, off, blobs = {}, 0, []
    for name in members:
        b, e = hdr[name]["data_offsets"]
        h[name] = {"dtype": hdr[name]["dtype"], "shape": hdr[name]["shape"],
                   "data_offsets": [off, off + e - b]}
        off += e - b
        blobs.append(data[b:e])
        wm[name] = fn
    if meta:
        h["__metadata__"] = meta
    hj = json.dumps(h).encode()
    hj += b" " * (-len(hj) % 8)
    with open(f"{t}/sh/{fn}", "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))
with open(f"{t}/sh/model.safetensors.index.json", "w") as f:
    json.dump({"metadata": {"total_size": len(data)}, "weight_map": dict(sorted(wm.items()))},
              f, indent=2)
PY

# the layers and their numbers; timings and input paths aside
same_layers() {
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
    roles = sorted((i["layer"], i["role"], i["tensor"]) for i in r["inputs"])
    return strip(r["layers"]), roles
a, b = load(sys.argv[1]), load(sys.argv[2])
sys.exit(0 if a == b and len(a[1]) == 12 else 1)
PY
}

run "$NC" fit "$T/one.safetensors" --out "$T/r-one" --quiet
expect_status 0
for spec in "$T/sh" "$T/sh/" "$T/sh/model.safetensors.index.json" "$T/sh/model-*.safetensors"; do
    rm -rf "$T/r"
    run "$NC" fit "$spec" --out "$T/r" --quiet
    expect_status 0
    check "fit $spec: same layers, companions and numbers as one file" \
        same_layers "$T/r-one/report.json" "$T/r/report.json"
done
# the report names each tensor's own shard
check "inputs name their shards" grep -q 'model-00002-of-00003.safetensors' "$T/r/report.json"
# default output folder named after the folder / index / glob
(cd "$T" && run "$NC" fit sh/ --quiet && [ -f out/sh/report.json ]) && _ok || _bad "out/sh for sh/"

# a config pointing at the index
cat >"$T/sh.json" <<EOF
{"name": "sh", "layers": [{"file": "sh/model.safetensors.index.json", "tensor": "middle.input"}]}
EOF
run "$NC" run "$T/sh.json" --out "$T/r-cfg" --quiet
expect_status 0
check "config: middle's output companion found in another shard" \
    grep -q '"role":[[:space:]]*"output"' "$T/r-cfg/report.json"

# bad input: one line, exit 2, no output
bad_fit() {
    rm -rf "$T/bad-out"
    run "$NC" fit "$1" --out "$T/bad-out" --quiet
    expect_status 2
    expect_err "normcmp: $2"
    expect_no_file "$T/bad-out"
}
mkdir -p "$T/b"
cp "$T/sh/model-00001-of-00003.safetensors" "$T/b/"
printf '{"weight_map": {"early.input": "model-00002-of-00003.safetensors"}}' >"$T/b/wrong.safetensors.index.json"
bad_fit "$T/b/wrong.safetensors.index.json" "$T/b/model-00002-of-00003.safetensors: cannot open input file: No such file or directory"
cp "$T/sh/model-00002-of-00003.safetensors" "$T/b/"
printf '{"weight_map": {"early.input": "model-00002-of-00003.safetensors"}}' >"$T/b/wrong.safetensors.index.json"
bad_fit "$T/b/wrong.safetensors.index.json" "$T/b/wrong.safetensors.index.json: weight_map.\"early.input\": no such tensor in $T/b/model-00002-of-00003.safetensors (expected the shard that holds it)"
printf '{"weight_map": ["a"]}' >"$T/b/wrong.safetensors.index.json"
bad_fit "$T/b/wrong.safetensors.index.json" "$T/b/wrong.safetensors.index.json: weight_map: expected an object of \"<tensor>\": \"<shard file>\""
printf '{"weight_map": {"a": 1}}' >"$T/b/wrong.safetensors.index.json"
bad_fit "$T/b" "$T/b/wrong.safetensors.index.json: weight_map.\"a\": expected a shard file name (a non-empty string)"
printf '{"weight_map": {"a": "x"},' >"$T/b/wrong.safetensors.index.json"
bad_fit "$T/b/wrong.safetensors.index.json" "$T/b/wrong.safetensors.index.json: malformed JSON at line 1, column 26 (expected a safetensors index: {\"weight_map\": {\"<tensor>\": \"<shard file>\"}})"
rm "$T/b/wrong.safetensors.index.json"
cp "$T/sh/model-00001-of-00003.safetensors" "$T/b/copy.safetensors"
bad_fit "$T/b" "$T/b: tensor 'early.bias' is in both $T/b/copy.safetensors and $T/b/model-00001-of-00003.safetensors (expected each tensor in one shard)"
mkdir -p "$T/empty"
bad_fit "$T/empty" "$T/empty: no *.safetensors file and no safetensors.index.json index in the folder (expected a sharded dump)"
bad_fit "$T/nothing-*.safetensors" "$T/nothing-*.safetensors: no such file, and no file matches it as a pattern"

# --- every file is opened without blocking and must be a regular file: an
# index that is a FIFO (or a link to one) or a folder is refused at once
# (exit 2), by fit and inspect alike (timeout: a blocked open would hang)
bad_nohang() { # $1 command, $2 spec, $3 expected message
    rm -rf "$T/bad-out"
    if [ "$1" = fit ]; then
        run timeout 20 "$NC" fit "$2" --out "$T/bad-out" --quiet
    else
        run timeout 20 "$NC" inspect "$2"
    fi
    expect_status 2
    expect_err "normcmp: $3"
    expect_no_file "$T/bad-out"
}
mkdir -p "$T/ff"
cp "$T/sh/model-00001-of-00003.safetensors" "$T/ff/"
mkfifo "$T/ff/model.safetensors.index.json"
bad_nohang fit "$T/ff" "$T/ff/model.safetensors.index.json: not a regular file (a FIFO), expected an index file"
bad_nohang inspect "$T/ff" "$T/ff/model.safetensors.index.json: not a regular file (a FIFO), expected an index file"
rm "$T/ff/model.safetensors.index.json"
mkfifo "$T/fifo"
ln -s "$T/fifo" "$T/ff/model.safetensors.index.json"
bad_nohang fit "$T/ff" "$T/ff/model.safetensors.index.json: not a regular file (a FIFO), expected an index file"
rm "$T/ff/model.safetensors.index.json"
mkdir "$T/ff/model.safetensors.index.json"
bad_nohang fit "$T/ff" "$T/ff/model.safetensors.index.json: is a directory, expected an index file"
rmdir "$T/ff/model.safetensors.index.json"

# --- a glob refuses what the folder and index forms refuse: a dangling
# link or a FIFO among its matches is named, not skipped
mkdir -p "$T/g"
cp "$T/sh/model-00001-of-00003.safetensors" "$T/g/m-1.safetensors"
ln -s "$T/nowhere.safetensors" "$T/g/m-2.safetensors"
bad_nohang fit "$T/g/m-*.safetensors" "$T/g/m-*.safetensors: matches $T/g/m-2.safetensors, a symbolic link to nothing (expected safetensors shards)"
rm "$T/g/m-2.safetensors"
mkfifo "$T/g/m-2.safetensors"
bad_nohang fit "$T/g/m-*.safetensors" "$T/g/m-*.safetensors: matches $T/g/m-2.safetensors, a FIFO (expected safetensors shards, regular files)"

# --- weight_map names files in the index's folder or below it: '..' is
# refused like an absolute path (docs/dumping.md)
mkdir -p "$T/up/idx"
cp "$T/sh/model-00001-of-00003.safetensors" "$T/up/"
printf '{"weight_map": {"early.bias": "../model-00001-of-00003.safetensors"}}' >"$T/up/idx/m.safetensors.index.json"
bad_fit "$T/up/idx/m.safetensors.index.json" "$T/up/idx/m.safetensors.index.json: weight_map.\"early.bias\": \"../model-00001-of-00003.safetensors\" leads out of the index's folder (expected a file name inside it, without '..')"
mkdir -p "$T/up/idx/sub"
cp "$T/sh/model-00001-of-00003.safetensors" "$T/up/idx/sub/"
printf '{"weight_map": {"early.bias": "sub/model-00001-of-00003.safetensors"}}' >"$T/up/idx/m.safetensors.index.json"
run "$NC" inspect "$T/up/idx/m.safetensors.index.json"
expect_status 0

done_tests
