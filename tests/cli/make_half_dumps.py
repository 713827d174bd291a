"""make_half_dumps.py DIR - the real-output check at half precision
(tests/cli/test_normcheck_half.sh; docs/report.md, "real_output_check").

Real layers from the repository: data/vit4mnist ln00, ln05, ln11 (LayerNorm,
eps 1e-5, with weight and bias) and data/stories260k attn0, final (RMSNorm of
the llama2.c stories260K model, eps 1e-5, weight only). Their outputs are
computed here the way PyTorch computes them for each dtype:

  f32        float32 throughout (= the models' own outputs)
  f16        LayerNorm in float32 rounded once to float16 (PyTorch's CUDA
             kernel; its CPU build has no float16 LayerNorm); RMSNorm as
             Hugging Face LLaMA: float32 normalisation, cast to the input's
             dtype, times the float16 weight (scripts/llama2c_model.py)
  bf16       torch.nn.functional.layer_norm on bfloat16 tensors (this CPU
             build's own kernel: its statistics lose bits, errors up to
             ~10 half-ulps); RMSNorm as for f16
  bf16f32    LayerNorm in float32 rounded once to bfloat16 (LayerNorm only)
  f16after, bf16after  the float32 model's tensors rounded after it ran (a
             dump with --dtype), metadata source_dtype "float32"

Each precision is written in five metadata variants, one file with all its
layers each: half_<prec>_<variant>.safetensors, variants right (norm and eps
as the model), wrongkind (the other kind), eps100 (eps 1e-3), nometa, outonly
(the output without weight and bias, and no metadata).

Synthetic layers at the thresholds (seeded; d = 64):

  thr_zeromean_f32, thr_zeromean_bf16   LayerNorm whose every token has mean
             0 (to the storage's rounding): both kinds reproduce it
  thr_above_bf16   LayerNorm with token means 0.0033 s: RMSNorm's q_free
             between q_max and 10 q_max; metadata says rmsnorm
  thr_below_bf16   token means 0.0011 s: RMSNorm's q_free between q_max / 10
             and q_max; metadata says rmsnorm
  thr_noisy_bf16   LayerNorm computed in bfloat16 step by step (the mean
             accumulated in bfloat16, every intermediate rounded): q between
             q_max / 10 and q_max; metadata right
  thr_biased_f32   LayerNorm whose every token's scale is 0.6 u_c too large
             (a model's biased rsqrt): eps deviates by 0.6 of the rounding
             bias, far beyond 3 se; metadata right
  thr_epsoff_f32   the same without the bias, metadata eps 1e-5 + 4 rounding
             biases: outside the interval, inside it with 10x the bias
  thr_biased_bf16, thr_biased_f16, thr_epsoff_bf16, thr_epsoff_f16   the same
             for the output's share of the bias (0.05 u_y bfloat16, 0.01 u_y
             float16): scales 0.6 shares high, and metadata eps 3 shares off
  thr_hf_bf16      Hugging Face LLaMA's RMSNorm in bfloat16 at d = 4096, 256
             tokens: its rounding chain biases the scales (0.4 of the share)
  thr_jitter_f32   token scales jittering by up to 14 u_c: each token fits, eps
             is allowed, the fixed-eps q is between q_max and 10 q_max

Degenerate outputs (deg_const, deg_zerow: .npy, output 0): both kinds
reproduce them, so the kind is undetermined.
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

out = sys.argv[1]
top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
WIRE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64"}
EPS = 1e-5


def write_st(path, tensors, meta):
    header, off, blobs = {}, 0, []
    for name, t in tensors:
        t = t.contiguous()
        b = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": WIRE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    header["__metadata__"] = dict(meta, format="normcmp test dump")
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))


def npy(folder, name):
    return torch.from_numpy(np.load(os.path.join(top, "data", folder, name)))


def layer_norm(x, w, b, dt, mode):
    """mode "pt": PyTorch on dt; "f32": float32, rounded once to dt."""
    xh, wh, bh = x.to(dt), w.to(dt), b.to(dt)
    if mode == "pt" or dt == torch.float32:
        return xh, wh, bh, F.layer_norm(xh, (x.shape[1],), wh, bh, EPS)
    y = F.layer_norm(xh.float(), (x.shape[1],), wh.float(), bh.float(), EPS).to(dt)
    return xh, wh, bh, y


def rms_norm(x, w, dt):
    """Hugging Face LLaMA's RMSNorm (scripts/llama2c_model.py)."""
    xh, wh = x.to(dt), w.to(dt)
    xf = xh.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).type_as(xh) * wh
    return xh, wh, None, y


vit = {p: [npy("vit4mnist", f"{p}_{s}.npy") for s in ("input", "weight", "bias")]
       for p in ("ln00", "ln05", "ln11")}
stories = {p: [npy("stories260k", f"{p}_{s}.npy") for s in ("input", "weight")]
           for p in ("attn0", "final")}


def layers(prec):
    """(name, kind, x, y, w, b, source_dtype) of every layer at prec."""
    after = prec.endswith("after")
    dt = DT[prec.replace("after", "").replace("bf16f32", "bf16")]
    for p, (x, w, b) in vit.items():
        if after:
            y = layer_norm(x, w, b, torch.float32, "pt")[3]
            yield p, "layernorm", x.to(dt), y.to(dt), w.to(dt), b.to(dt), "float32"
        else:
            xh, wh, bh, y = layer_norm(x, w, b, dt, "pt" if prec == "bf16" else "f32")
            yield p, "layernorm", xh, y, wh, bh, None
    if prec == "bf16f32":
        return
    for p, (x, w) in stories.items():
        if after:
            y = rms_norm(x, w, torch.float32)[3]
            yield p, "rmsnorm", x.to(dt), y.to(dt), w.to(dt), None, "float32"
        else:
            xh, wh, _, y = rms_norm(x, w, dt)
            yield p, "rmsnorm", xh, y, wh, None, None


for prec in ("f32", "f16", "bf16", "bf16f32", "f16after", "bf16after"):
    for variant in ("right", "wrongkind", "eps100", "nometa", "outonly"):
        tensors, meta = [], {}
        for name, kind, x, y, w, b, src in layers(prec):
            tensors += [(name + ".input", x), (name + ".output", y)]
            if variant != "outonly":
                tensors.append((name + ".weight", w))
                if b is not None:
                    tensors.append((name + ".bias", b))
            if variant in ("right", "wrongkind", "eps100"):
                other = "rmsnorm" if kind == "layernorm" else "layernorm"
                meta[name + ".norm"] = other if variant == "wrongkind" else kind
                meta[name + ".eps"] = repr(1e-3 if variant == "eps100" else EPS)
            if src and variant != "outonly":
                meta[name + ".source_dtype"] = src
        write_st(os.path.join(out, f"half_{prec}_{variant}.safetensors"), tensors, meta)

# ---------------------------------------------------------------- thresholds
rng = np.random.default_rng(17)
N, D = 400, 64
w0 = rng.uniform(0.5, 1.5, D)
b0 = rng.normal(0.0, 0.1, D)


def tokens(mean_over_s):
    """Token rows with std 1..4 and mean mean_over_s * std (float64)."""
    z = rng.standard_normal((N, D))
    z = (z - z.mean(1, keepdims=True)) / z.std(1, keepdims=True)
    s = np.exp(rng.uniform(0, np.log(4), (N, 1)))
    return (z + mean_over_s * rng.choice([-1, 1], (N, 1))) * s


def ln64(x, w, b, eps=EPS, scale=1.0):
    mu = x.mean(1, keepdims=True)
    v = ((x - mu) ** 2).mean(1, keepdims=True)
    return (x - mu) / np.sqrt(v + eps) * scale * w + b


def t(a, dt):
    return torch.from_numpy(np.ascontiguousarray(a)).to(dt)


def write_thr(name, x, y, w, b, meta):
    tens = [("L.input", x), ("L.output", y), ("L.weight", w), ("L.bias", b)]
    write_st(os.path.join(out, name + ".safetensors"), tens,
             {("L." + k): v for k, v in meta.items()})


right = {"norm": "layernorm", "eps": repr(EPS)}
for dt, tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
    x = t(tokens(0.0), dt)
    z = x.double().numpy()
    z = z - z.mean(1, keepdims=True)  # the stored tokens' own mean removed again
    x = t(z, dt)
    X = x.double().numpy()
    w, b = t(w0, dt), t(b0, dt)
    y = t(ln64(X, w.double().numpy(), b.double().numpy()), dt)
    write_thr("thr_zeromean_" + tag, x, y, w, b, right if tag == "f32" else {})

bf = torch.bfloat16
for name, c in (("thr_above_bf16", 0.0033), ("thr_below_bf16", 0.0011)):
    x = t(tokens(c), bf)
    w, b = t(w0, bf), t(b0, bf)
    y = t(ln64(x.double().numpy(), w.double().numpy(), b.double().numpy()), bf)
    write_thr(name, x, y, w, b, {"norm": "rmsnorm", "eps": repr(EPS)})

# bfloat16 step by step: the mean accumulated in bfloat16 (a naive kernel),
# every intermediate rounded
x = t(tokens(0.5), bf)
w, b = t(w0, bf), t(b0, bf)
r = lambda a: t(a, bf).double().numpy()  # noqa: E731
X, W, B = x.double().numpy(), w.double().numpy(), b.double().numpy()


def bf_sum(a):
    acc = np.zeros((a.shape[0], 1))
    for i in range(a.shape[1]):
        acc = r(acc + a[:, i:i + 1])
    return acc


mu = r(bf_sum(X) / D)
c = r(X - mu)
rstd = r(1.0 / np.sqrt((c * c).mean(1, keepdims=True) + EPS))
y = r(r(r(c * rstd) * W) + B)
write_thr("thr_noisy_bf16", x, t(y, bf), w, b, right)

f32 = torch.float32
x = t(tokens(0.3) * 0.5, f32)
w, b = t(w0, f32), t(b0, f32)
X, W, B = x.double().numpy(), w.double().numpy(), b.double().numpy()
u_c = 2.0 ** -24
W0, B0 = W, B
write_thr("thr_biased_f32", x, t(ln64(X, W, B, scale=1 + 0.6 * u_c), f32), w, b, right)
mu = X.mean(1, keepdims=True)
m = ((X - mu) ** 2).mean(1)
# the rounding bias the check allows: 2 u_c times the weighted mean of m + eps,
# the weights ~ 1/m^2 (a^6 sum (w u / B)^2 with B ~ |y|); 4 of them off
wt = 1 / m ** 2
bias = 2 * u_c * (wt * (m + EPS)).sum() / wt.sum()
write_thr("thr_epsoff_f32", x, t(ln64(X, W, B), f32), w, b,
          {"norm": "layernorm", "eps": repr(EPS + 4 * bias)})

# the output's share of the rounding bias: a model whose scales run 0.6 of
# the allowed share high (single rounding, N = 2000, d = 512, so 3 se is well
# below the share), and one with the right scales whose metadata eps is 3
# shares off; and Hugging Face's RMSNorm in bfloat16 at d = 4096, whose own
# rounding chain biases every token's scale (no false alarm)
N2, D2 = 2000, 512
for dt, tag, share in ((torch.bfloat16, "bf16", 0.05), (torch.float16, "f16", 0.01)):
    u_y = 2.0 ** (-8 if tag == "bf16" else -11)
    z = rng.standard_normal((N2, D2))
    s = np.exp(rng.uniform(0, np.log(4), (N2, 1)))
    x = t((z + 0.3 * rng.choice([-1, 1], (N2, 1))) * s, dt)
    wd = rng.uniform(0.5, 1.5, D2)
    bd = rng.normal(0.0, 0.1, D2)
    w, b = t(wd, dt), t(bd, dt)
    X, W, B = x.double().numpy(), w.double().numpy(), b.double().numpy()
    y = t(ln64(X, W, B, scale=1 + 0.6 * share * u_y), dt)
    write_thr("thr_biased_" + tag, x, y, w, b, right)
    mu = X.mean(1, keepdims=True)
    m = ((X - mu) ** 2).mean(1)
    share_eps = 2 * share * u_y * (m ** -1).sum() / (m ** -2).sum()
    write_thr("thr_epsoff_" + tag, x, t(ln64(X, W, B), dt), w, b,
              {"norm": "layernorm", "eps": repr(EPS + 3 * share_eps)})
g = torch.Generator().manual_seed(5)
xr = (torch.randn(256, 4096, generator=g) * torch.exp(torch.rand(256, 1, generator=g) * 2) +
      torch.randn(1, 4096, generator=g) * 0.5).to(torch.bfloat16)
wr = (torch.rand(4096, generator=g) + 0.5).to(torch.bfloat16)
xf = xr.float()
yr = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).type_as(xr) * wr
write_st(os.path.join(out, "thr_hf_bf16.safetensors"),
         [("L.input", xr), ("L.output", yr), ("L.weight", wr)],
         {"L.norm": "rmsnorm", "L.eps": repr(EPS)})

# the agreement q of a fixed eps: a float32 model whose token scales jitter
# by up to 14 u_c (beyond the one u_c allowed): each token's own fit is
# exact, eps is allowed, but q is between q_max and 10 q_max
x = t(tokens(0.3), f32)
X = x.double().numpy()
jit = 1 + 14 * u_c * rng.uniform(-1, 1, (N, 1))
write_thr("thr_jitter_f32", x, t((ln64(X, W0, B0) - B0) * jit + B0, f32), t(W0, f32),
          t(B0, f32), right)

# ---------------------------------------------------------------- degenerate
# outputs that say nothing about the kind: constant tokens (LayerNorm gives
# the bias; here 0) and a zero weight; output only, so the weight is estimated
x = np.ones((30, 8), dtype=np.float32) * np.arange(1, 31, dtype=np.float32)[:, None]
np.save(os.path.join(out, "deg_const_input.npy"), x)
np.save(os.path.join(out, "deg_const_output.npy"), np.zeros_like(x))
x = rng.standard_normal((40, 16)).astype(np.float32)
np.save(os.path.join(out, "deg_zerow_input.npy"), x)
np.save(os.path.join(out, "deg_zerow_output.npy"), np.zeros_like(x))
np.save(os.path.join(out, "deg_zerow_weight.npy"), np.zeros(16, dtype=np.float32))
