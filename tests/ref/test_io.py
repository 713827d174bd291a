"""Readers, `inspect`, `norm` and `synth` against NumPy.

- .npy files NumPy writes (float32, float16, float64; versions 1.0, 2.0,
  3.0; ranks 1 to 4) and bfloat16 as ml_dtypes saves it ('<V2'): `inspect`
  gives NumPy's min, max, mean, std and non-finite count.
- `normcmp norm` reproduces LayerNorm and RMSNorm (docs/theory.md's worked
  examples, and NumPy float64 on random data, to float32 rounding), with
  --affine using the weight and bias beside the input.
- `normcmp synth` is deterministic: same seed, same bytes; and its
  safetensors output is readable by a plain json/struct parser.
- safetensors inputs: glob selection of layers, companions found by name.
"""
import json
import os
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker, layernorm, rmsnorm, run  # noqa: E402

C = Checker("test_io")


def inspect_rows(path):
    out = run("inspect", path).stdout.splitlines()
    rows = {}
    for line in out[1:]:
        f = line.split()
        if len(f) >= 8:
            rows[f[0]] = f
    return rows


def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even (as ml_dtypes)."""
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def save_bf16(path, bits, shape):
    hdr = "{'descr': '<V2', 'fortran_order': False, 'shape': %s, }" % (tuple(shape),)
    hdr = hdr.encode()
    pad = 64 - (10 + len(hdr) + 1) % 64
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr) + pad + 1) + hdr +
                b" " * pad + b"\n" + bits.tobytes())


def test_inspect(tmp):
    rng = np.random.default_rng(7)
    base = rng.standard_normal((5, 6, 7)) * 3.2 + 0.4
    base[1, 2, 3] = np.nan
    base[4, 0, 1] = np.inf
    for dt in ("<f4", "<f2", "<f8"):
        for version in ((1, 0), (2, 0), (3, 0)):
            for shape in ((210,), (30, 7), (5, 6, 7), (1, 5, 6, 7)):
                a = base.reshape(shape).astype(dt)
                p = os.path.join(tmp, f"a{dt[1:]}_{version[0]}_{len(shape)}.npy")
                with open(p, "wb") as f:
                    np.lib.format.write_array(f, a, version=version)
                r = inspect_rows(p)[os.path.basename(p)[:-4]]
                fin = a[np.isfinite(a)].astype(np.float64)
                what = f"inspect {dt} v{version[0]} rank {len(shape)}"
                C.ok(r[1] == {"<f4": "F32", "<f2": "F16", "<f8": "F64"}[dt], what + " dtype")
                C.ok(r[2] == "[" + ",".join(str(s) for s in shape) + "]", what + " shape " + r[2])
                cols = [float(v) for v in r[-5:-1]]
                C.rel(fin.min(), cols[0], 1e-5, what + " min")
                C.rel(fin.max(), cols[1], 1e-5, what + " max")
                C.rel(fin.mean(), cols[2], 1e-5, what + " mean")
                C.rel(fin.std(), cols[3], 1e-5, what + " std")
                C.ok(int(r[-1]) == 2, what + " nonfinite")
    # bfloat16 as ml_dtypes writes it
    bits = bf16_bits(base.ravel().astype(np.float32))
    p = os.path.join(tmp, "b_input.npy")
    save_bf16(p, bits, (30, 7))
    vals = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    fin = vals[np.isfinite(vals)]
    r = inspect_rows(p)["b_input"]
    C.ok(r[1] == "BF16", "bf16 dtype")
    C.rel(fin.mean(), float(r[-3]), 1e-5, "bf16 mean")
    C.rel(fin.std(), float(r[-2]), 1e-5, "bf16 std")


def test_norm(tmp):
    # the worked examples of docs/theory.md, through the command line
    p = os.path.join(tmp, "ex.npy")
    np.save(p, np.array([[1, 2, 3, 4]], dtype=np.float32))
    o = os.path.join(tmp, "ex_ln.npy")
    run("norm", p, "--norm", "layernorm", "--eps", "1e-5", "-o", o)
    y = np.load(o)
    C.ok(y.dtype == np.float32 and y.shape == (1, 4), "norm output float32, same shape")
    C.ok(np.allclose(y[0], [-1.3416, -0.4472, 0.4472, 1.3416], atol=5e-5), f"LayerNorm example {y}")
    run("norm", p, "--norm", "rmsnorm", "--eps", "0", "-o", o)
    y = np.load(o)
    C.ok(np.allclose(y[0], [0.3651, 0.7303, 1.0954, 1.4606], atol=5e-5), f"RMSNorm example {y}")
    # random data, every dtype, against NumPy float64 rounded to float32
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 11, 24)) * rng.uniform(0.1, 5, (3, 11, 1)) + 0.7
    for dt in ("<f4", "<f2", "<f8"):
        xi = x.astype(dt)
        p = os.path.join(tmp, f"r{dt[1:]}_input.npy")
        np.save(p, xi)
        for norm, eps, fn in (("layernorm", 1e-5, layernorm), ("rmsnorm", 1e-6, rmsnorm)):
            run("norm", p, "--norm", norm, "--eps", repr(eps), "-o", o)
            want, _ = fn(xi.astype(np.float64).reshape(-1, 24), eps)
            got = np.load(o).astype(np.float64).reshape(-1, 24)
            C.ok(np.max(np.abs(got - want)) <= 4e-7 * np.max(np.abs(want)),
                 f"norm {norm} {dt}: max diff {np.max(np.abs(got - want))}")
    # --affine finds <prefix>_weight.npy and _bias.npy
    w = rng.uniform(0.5, 1.5, 24).astype(np.float32)
    b = rng.uniform(-0.2, 0.2, 24).astype(np.float32)
    np.save(os.path.join(tmp, "rf4_weight.npy"), w)
    np.save(os.path.join(tmp, "rf4_bias.npy"), b)
    run("norm", os.path.join(tmp, "rf4_input.npy"), "--affine", "-o", o)
    want, _ = layernorm(x.astype("<f4").astype(np.float64).reshape(-1, 24), 1e-5)
    want = want * w + b
    got = np.load(o).astype(np.float64).reshape(-1, 24)
    C.ok(np.max(np.abs(got - want)) < 1e-6, "norm --affine")
    # the real vit4mnist outputs
    base = os.path.join(TOP, "data", "vit4mnist", "ln05")
    run("norm", base + "_input.npy", "--affine", "-o", o)
    C.ok(np.max(np.abs(np.load(o) - np.load(base + "_output.npy"))) < 1e-5,
         "norm --affine reproduces the model's LayerNorm output")


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return header, data[8 + n:]


def test_synth_and_safetensors(tmp):
    a = os.path.join(tmp, "a.safetensors")
    b = os.path.join(tmp, "b.safetensors")
    run("synth", "-o", a, "--preset", "all", "--tokens", "64", "--dim", "32", "--seed", "9",
        "--affine")
    run("synth", "-o", b, "--preset", "all", "--tokens", "64", "--dim", "32", "--seed", "9",
        "--affine")
    C.ok(open(a, "rb").read() == open(b, "rb").read(), "synth is deterministic")
    header, data = read_safetensors(a)
    names = sorted(k for k in header if k != "__metadata__")
    want = sorted(f"{p}.{c}" for p in ("early", "middle", "late")
                  for c in ("input", "output", "weight", "bias"))
    C.ok(names == want, f"synth --preset all tensors: {names}")
    e = header["late.input"]
    x = np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], "<f4").reshape(64, 32)
    e = header["late.output"]
    yo = np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], "<f4").reshape(64, 32)
    w = np.frombuffer(data[slice(*header["late.weight"]["data_offsets"])], "<f4")
    bb = np.frombuffer(data[slice(*header["late.bias"]["data_offsets"])], "<f4")
    y, _ = layernorm(x.astype(np.float64), 1e-5)
    C.ok(np.max(np.abs(y * w + bb - yo)) < 1e-5, "synth --affine output is LayerNorm * w + b")
    # fitting by glob: one layer per matching tensor, companions found by name
    with tempfile.TemporaryDirectory() as d:
        run("fit", a, "--tensor", "[ml]*.input", "--out", d, "--quiet", "--no-jacobian")
        rep = json.load(open(os.path.join(d, "report.json")))
        C.ok([L["name"] for L in rep["layers"]] == ["middle", "late"], "glob selects layers")
        for L in rep["layers"]:
            C.ok(L["real_output_check"]["max_abs_diff"] < 1e-5, f"{L['name']} companions found")
        roles = sorted({(i["layer"], i["role"]) for i in rep["inputs"]})
        C.ok(len(roles) == 8, f"inputs list every tensor read: {roles}")
    # a different seed gives different data; another dtype the same values, rounded
    c = os.path.join(tmp, "c.npy")
    run("synth", "-o", c, "--preset", "late", "--tokens", "64", "--dim", "32", "--seed", "10")
    h = os.path.join(tmp, "h.npy")
    run("synth", "-o", h, "--preset", "late", "--tokens", "64", "--dim", "32", "--seed", "10",
        "--dtype", "f16")
    C.ok(np.array_equal(np.load(c).astype(np.float16), np.load(h)), "synth --dtype f16 rounds")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_inspect(tmp)
        test_norm(tmp)
        test_synth_and_safetensors(tmp)
    C.done()


if __name__ == "__main__":
    main()
