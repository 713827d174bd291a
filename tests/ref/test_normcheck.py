"""The real-output check's decision statistics, recomputed with NumPy from
docs/report.md ("real_output_check"): the bound B of every element (its
magnitudes from the hypothesis's value w n + b), each
token's weighted scale, q_free of both kinds, eps (estimate, cluster-robust
se, rounding bias, interval) and q of the norm used. On the vit4mnist
layers as shipped (float32) and on float16 and bfloat16 copies written here
(inputs, weight and bias rounded; output LayerNorm in float64 rounded once;
bfloat16 rounding done on the bits, round to nearest even), so that the
half-ulp of every dtype is checked too.
"""
import json
import os
import struct
import tempfile

import numpy as np

from common import TOP, Checker, run

C = Checker("test_normcheck.py")
U = {"F32": 2.0 ** -24, "F16": 2.0 ** -11, "BF16": 2.0 ** -8}
EMIN = {"F32": -126, "F16": -14, "BF16": -126}
EPS = 1e-5
UC = 2.0 ** -24


def half_ulp(v, dt):
    """Half an ulp of each v: 2^floor(log2|v|) u, plus u 2^emin (half the
    subnormal spacing: covers the subnormal range and 0)."""
    v = np.abs(v)
    e = np.frexp(v)[1] - 1
    return np.where(v > 0, np.ldexp(U[dt], e), 0.0) + np.ldexp(U[dt], EMIN[dt])


def to_bf16(a):
    """float64 -> bfloat16 bits (via float32, round to nearest even)."""
    b = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def from_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def rounded(a, dt):
    """a rounded to dt (as float64 values) and the bytes to store."""
    if dt == "F32":
        s = np.asarray(a, dtype=np.float32)
        return s.astype(np.float64), s.tobytes()
    if dt == "F16":
        s = np.asarray(a, dtype=np.float16)
        return s.astype(np.float64), s.tobytes()
    bits = to_bf16(a)
    return from_bf16(bits), bits.tobytes()


def write_st(path, tensors):
    header, off, blobs = {}, 0, []
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    hj = json.dumps(header).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))


def kind_stats(X, Y, W, B, dt, kind):
    """Per token: m_t, the weighted scale a_t, uu_t, rss_t (docs/report.md)."""
    u = X - X.mean(axis=1, keepdims=True) if kind == "layernorm" else X
    m = (u * u).mean(axis=1)
    z, wu = Y - B, W * u
    a0 = (z * wu).sum(axis=1) / (wu * wu).sum(axis=1)
    a = np.abs(a0)[:, None]
    n = a * np.sign(a0)[:, None] * u
    hx = half_ulp(X, dt)
    # the input's rounding: directly, through the mean (LayerNorm), through the scale
    s1 = hx.mean(axis=1, keepdims=True) if kind == "layernorm" else 0.0
    su = (np.abs(u) * hx).mean(axis=1, keepdims=True)
    bound = (half_ulp(W * n + B, dt) + half_ulp(W * n, dt) + np.abs(W) * half_ulp(n, dt) +
             half_ulp(B, dt) + np.abs(W) * a * (hx + s1 + np.abs(n) * a * su) +
             half_ulp(W, dt) * np.abs(n) + half_ulp(B, dt))
    bound = bound + 2.0 ** -500
    zu = (z * wu / bound ** 2).sum(axis=1)
    uu = ((wu / bound) ** 2).sum(axis=1)
    a = zu / uu
    rss = (((z - a[:, None] * wu) / bound) ** 2).sum(axis=1)
    return m, a, uu, rss


# the bound on each token's systematic scale error: one u_c, plus 0.05 u_y
# for a bfloat16 output and 0.01 u_y for a float16 one
SCALE_BIAS = {"F32": UC, "F16": UC + 0.01 * U["F16"], "BF16": UC + 0.05 * U["BF16"]}


def eps_fit(m, a, uu, dt):
    """Fixed slope: estimate, cluster-robust se, bias, clusters."""
    e = 1 / a ** 2 - m
    lw = 6 * np.log(a) + np.log(uu)
    w = np.exp(lw - lw.max())
    est = (w * e).sum() / w.sum()
    _, cl = np.unique(np.stack([m, a], axis=1), axis=0, return_inverse=True)
    cl = cl.ravel()
    k = cl.max() + 1
    g = np.bincount(cl, weights=w * (e - est), minlength=k)
    se = np.sqrt((g ** 2).sum() * k / (k - 1)) / w.sum()
    bias = 2 * SCALE_BIAS[dt] * (w * (m + max(est, 0.0))).sum() / w.sum()
    return est, se, bias, k


def check_layer(tag, X, Y, W, B, dt, rep):
    L = rep["layers"][0]
    c = L["real_output_check"]
    d = c["detection"]
    stats = {k: kind_stats(X, Y, W, B, dt, k) for k in ("layernorm", "rmsnorm")}
    N, D = X.shape
    for k, (m, a, uu, rss) in stats.items():
        C.rel(rss.sum() / (N * D), d["q_free"][k], 1e-3, f"{tag}: q_free {k}")
    C.ok(d["kind_verdict"] == "identified" and d["kind"] == "layernorm",
         f"{tag}: layernorm identified ({d['kind_verdict']} {d['kind']})")
    m, a, uu, rss = stats["layernorm"]
    est, se, bias, k = eps_fit(m, a, uu, dt)
    e = d["eps"]
    C.ok(e["distinct_tokens"] == k and e["tokens"] == N,
         f"{tag}: {k} distinct of {N} tokens, got {e['distinct_tokens']} of {e['tokens']}")
    C.abs(est, e["estimate"], 1e-3 * se, f"{tag}: eps estimate")
    C.rel(se, e["se"], 1e-3, f"{tag}: eps se")
    C.rel(bias, e["rounding_bias"], 1e-6, f"{tag}: eps rounding bias")
    C.abs(est - 3 * se - bias, e["interval"][0], 1e-2 * se, f"{tag}: interval lo")
    C.abs(est + 3 * se + bias, e["interval"][1], 1e-2 * se, f"{tag}: interval hi")
    ap = 1 / np.sqrt(m + L["eps"])
    da = np.maximum(np.abs(a - ap) - SCALE_BIAS[dt] * ap, 0)
    C.rel((rss + da ** 2 * uu).sum() / (N * D), c["q"], 1e-3, f"{tag}: q of the norm used")
    C.ok(c["status"] == "ok" and L["eps"] == EPS, f"{tag}: status ok, eps 1e-5 kept")


data = os.path.join(TOP, "data", "vit4mnist")
with tempfile.TemporaryDirectory() as tmp:
    for p in ("ln00", "ln05", "ln11"):
        x, y, w, b = (np.load(os.path.join(data, f"{p}_{s}.npy")).astype(np.float64)
                      for s in ("input", "output", "weight", "bias"))
        out = os.path.join(tmp, p)
        run("fit", os.path.join(data, f"{p}_input.npy"), "--out", out, "--quiet",
            "--no-jacobian")
        rep = json.load(open(os.path.join(out, "report.json")))
        check_layer(f"{p} f32", x, y, w, b, "F32", rep)
        for dt in ("F16", "BF16"):
            X, rx = rounded(x, dt)
            W, rw = rounded(w, dt)
            B, rb = rounded(b, dt)
            mu = X.mean(axis=1, keepdims=True)
            v = ((X - mu) ** 2).mean(axis=1, keepdims=True)
            Y, ry = rounded((X - mu) / np.sqrt(v + EPS) * W + B, dt)
            path = os.path.join(tmp, f"{p}_{dt}.safetensors")
            write_st(path, {"L.input": (dt, x.shape, rx), "L.output": (dt, x.shape, ry),
                            "L.weight": (dt, w.shape, rw), "L.bias": (dt, b.shape, rb)})
            out = os.path.join(tmp, f"{p}_{dt}")
            run("fit", path, "--out", out, "--quiet", "--no-jacobian", "--eps", "1e-5")
            rep = json.load(open(os.path.join(out, "report.json")))
            check_layer(f"{p} {dt}", X, Y, W, B, dt, rep)
C.done()
