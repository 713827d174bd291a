"""Cross-check of the drop-in parameters (docs/dropin.md) against NumPy/SciPy
and PyTorch, on a real LayerNorm layer (data/vit4mnist ln00: weight, bias,
real output), a LLaMA-named RMSNorm dump built here (weight only, real
output), a layer with no companions and one whose weight is one value.

For each layer, independently of normcmp's numbers:
- the norm's output y in float64 and the affine output z = w y + b;
- per channel and for a given alpha (or C), gamma_i and beta_i by least
  squares of y on [g, 1] (g = tanh(alpha x) or x / sqrt(x^2 + C)), and the
  objective F = sum_i w_i^2 SSE_i; the fitted alpha and C where
  dF/dlog(theta) = 0 (its envelope-theorem form), bracketed from a scan of
  F on a log grid that knows nothing of normcmp's answer, solved by brentq:
  1e-9 relative to normcmp's; the objective there 1e-10;
- the three safetensors files read with a few lines of Python (the header
  and the float32 bytes, no safetensors library): their tensors' names,
  shapes and dtypes, the metadata, weight_i = w_i gamma_i and
  bias_i = w_i beta_i + b_i within float32 rounding, alpha0 as its rule
  says;
- the RMSEs of the written (float32) parameters against z and the real
  output, in float64: 1e-10 relative to the report; then the parameters
  loaded into the DyT repository's DynamicTanh module (alpha ones(1) *
  alpha0, weight ones(d), bias zeros(d), forward tanh(alpha x) * weight +
  bias, channels last) and a DyISRU module in PyTorch, in float32 on the
  float32 input: the real-output RMSE to 2e-6 relative (float precision),
  and in float64 to 1e-10;
- roles, depths, alpha0 rules, and the run-level alpha by role (medians,
  ranges) from the per-layer numbers.
"""
import json
import math
import os
import struct
import sys
import tempfile

import numpy as np
from scipy.optimize import brentq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker, layernorm, rmsnorm, run  # noqa: E402

C = Checker("test_dropin")
FILES = {"dyt": "dropin_dyt.safetensors", "dyt_alpha0": "dropin_dyt_alpha0.safetensors",
         "dyisru": "dropin_dyisru.safetensors"}


def read_st(path):
    """An independent safetensors reader: {name: float64 array}, metadata."""
    with open(path, "rb") as f:
        buf = f.read()
    n = struct.unpack("<Q", buf[:8])[0]
    head = json.loads(buf[8:8 + n])
    meta = head.pop("__metadata__", {})
    out, base = {}, 8 + n
    for name, e in head.items():
        C.ok(e["dtype"] == "F32", f"{path}: {name} is F32")
        a, b = e["data_offsets"]
        arr = np.frombuffer(buf[base + a:base + b], dtype="<f4").reshape(e["shape"])
        out[name] = arr
    return out, meta


def g_of(kind, theta, x):
    return np.tanh(theta * x) if kind == "tanh" else x / np.sqrt(x * x + theta)


def dg_of(kind, theta, x):
    """d g / d theta"""
    if kind == "tanh":
        return x * (1.0 - np.tanh(theta * x) ** 2)
    return -0.5 * x / (x * x + theta) ** 1.5


def ls(y, T):
    """Per-channel least squares of y on [T, 1]: gamma, beta, residuals."""
    n = y.shape[0]
    st, stt = T.sum(0), (T * T).sum(0)
    sy, syt = y.sum(0), (y * T).sum(0)
    det = n * stt - st * st
    gamma = (n * syt - st * sy) / det
    beta = (stt * sy - st * syt) / det
    return gamma, beta, y - gamma * T - beta


def objective(kind, theta, x, y, w2):
    _, _, r = ls(y, g_of(kind, theta, x))
    return float(((r * r).sum(0) * w2).sum())


def dobj_dlog(kind, theta, x, y, w2):
    """theta dF/dtheta = theta sum_i w_i^2 sum_t -2 r_ti gamma_i dT/dtheta (envelope)."""
    gamma, _, r = ls(y, g_of(kind, theta, x))
    return float(theta * (-2.0 * (r * dg_of(kind, theta, x)).sum(0) * gamma * w2).sum())


def fit_ref(kind, x, y, w2, scale):
    """The minimum of F over log theta: a scan, then brentq on dF/dlog theta."""
    lo, hi = (1e-3 / scale, 1e3 / scale) if kind == "tanh" else (1e-4 * scale ** 2,
                                                                 1e6 * scale ** 2)
    grid = np.exp(np.linspace(math.log(lo), math.log(hi), 121))
    F = [objective(kind, t, x, y, w2) for t in grid]
    k = int(np.argmin(F))
    C.ok(0 < k < len(grid) - 1, f"{kind}: the scan's minimum is inside the grid")
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    return brentq(lambda u: dobj_dlog(kind, math.exp(u), x, y, w2), math.log(a), math.log(b),
                  xtol=1e-14, rtol=1e-15, maxiter=200)


def check_layer(label, L, folder, files, x32, norm, eps, w, b, real):
    x = x32.astype(np.float64)
    y = (layernorm(x, eps) if norm == "layernorm" else rmsnorm(x, eps))[0]
    N, d = x.shape
    wv = np.ones(d) if w is None else w.astype(np.float64)
    bv = np.zeros(d) if b is None else b.astype(np.float64)
    z = wv * y + bv
    w2 = wv * wv
    D = L["dropin"]
    name = L["name"]
    C.ok(D["status"] == "ok", f"{label}: dropin status {D['status']}")
    C.ok(D["affine"] == ("none: weight 1, bias 0" if w is None and b is None else "companions"),
         f"{label}: affine {D['affine']}")
    weighted = w is not None and not np.all(w2 == w2[0])
    C.ok(D["weighting"].startswith("w_i^2") == weighted, f"{label}: weighting {D['weighting']}")
    C.ok(D["points"] == N * d, f"{label}: points")
    scale = float(x.std())
    for key, kind, param in (("dyt", "tanh", "alpha"), ("dyisru", "isru", "C")):
        F = D[key]
        ref = math.exp(fit_ref(kind, x, y, w2, scale))
        C.rel(ref, F[param], 1e-9, f"{label} {key} {param} (weighted objective)")
        C.rel(objective(kind, ref, x, y, w2), F["objective"], 1e-10, f"{label} {key} objective")
        C.ok(F["converged"] and F["status"].startswith("ok"), f"{label} {key} converged")
    a0 = D["dyt_alpha0"]
    # every file: tensors, shapes, metadata; weight and bias as composed
    for key, kind, param in (("dyt", "tanh", "alpha"), ("dyt_alpha0", "tanh", "alpha"),
                             ("dyisru", "isru", "C")):
        F = D[key]
        t, meta = files[key]
        p32 = t[f"{name}.{param}"]
        C.ok(p32.shape == (1,) and t[f"{name}.weight"].shape == (d,) and
             t[f"{name}.bias"].shape == (d,), f"{label} {key}: shapes [1], [d], [d]")
        theta = a0["alpha"] if key == "dyt_alpha0" else F[param]
        C.ok(float(p32[0]) == float(np.float32(theta)), f"{label} {key}: {param} is float32 of "
             f"the report's ({p32[0]!r} vs {theta!r})")
        C.ok(float(p32[0]) == F[param + "_float32"], f"{label} {key}: {param}_float32")
        gamma, beta, _ = ls(y, g_of(kind, float(p32[0]) if key == "dyt_alpha0" else theta, x))
        W, B = t[f"{name}.weight"].astype(np.float64), t[f"{name}.bias"].astype(np.float64)
        C.ok(np.allclose(W, wv * gamma, rtol=2e-7, atol=2e-7 * np.abs(wv * gamma).max()),
             f"{label} {key}: weight = w gamma (float32)")
        C.ok(np.allclose(B, wv * beta + bv, rtol=2e-7, atol=2e-7 * np.abs(wv * beta + bv).max()),
             f"{label} {key}: bias = w beta + b (float32)")
        C.ok(meta[f"{name}.role"] == L["role"], f"{label} {key}: M.role")
        C.ok(meta[f"{name}.affine"] == D["affine"], f"{label} {key}: M.affine")
        C.ok(float(meta[f"{name}.rmse_vs_recomputed"]) == F["rmse_vs_recomputed"],
             f"{label} {key}: M.rmse_vs_recomputed reads back as the report's")
        C.ok((f"{name}.rmse_vs_real" in meta) == (real is not None), f"{label} {key}: real key")
        C.ok((f"{name}.alpha0_rule" in meta) == (key == "dyt_alpha0"), f"{label} {key}: rule key")
        if key == "dyt_alpha0":
            C.ok(meta[f"{name}.alpha0_rule"] == a0["alpha0_rule"], f"{label}: M.alpha0_rule")
        C.ok(meta["format"] == "normcmp-dropin 1" and meta["surrogate"] == key,
             f"{label} {key}: format and surrogate")
        # the RMSEs of what is written, in float64
        f = W * g_of(kind, float(p32[0]), x) + B
        C.rel(math.sqrt(np.mean((z - f) ** 2)), F["rmse_vs_recomputed"], 1e-10,
              f"{label} {key} rmse_vs_recomputed")
        if real is None:
            C.ok(F["rmse_vs_real"] is None and "no real output" in F["status"],
                 f"{label} {key}: rmse_vs_real null with a status")
        else:
            C.rel(math.sqrt(np.mean((real.astype(np.float64) - f) ** 2)), F["rmse_vs_real"],
                  1e-10, f"{label} {key} rmse_vs_real")
    return D


def torch_check(label, L, files, x32, real):
    """The files loaded into PyTorch modules reproduce the reported RMSE."""
    import torch
    from torch import nn

    class DynamicTanh(nn.Module):
        """As the DyT repository defines it (channels last)."""

        def __init__(self, d, alpha_init_value=0.5):
            super().__init__()
            self.alpha = nn.Parameter(torch.ones(1) * alpha_init_value)
            self.weight = nn.Parameter(torch.ones(d))
            self.bias = nn.Parameter(torch.zeros(d))

        def forward(self, x):
            return torch.tanh(self.alpha * x) * self.weight + self.bias

    class DyISRU(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.C = nn.Parameter(torch.ones(1))
            self.weight = nn.Parameter(torch.ones(d))
            self.bias = nn.Parameter(torch.zeros(d))

        def forward(self, x):
            return self.weight * x / torch.sqrt(x * x + self.C) + self.bias

    name, d = L["name"], x32.shape[1]
    target = real if real is not None else None
    for key in ("dyt", "dyt_alpha0", "dyisru"):
        t, _ = files[key]
        m = DyISRU(d) if key == "dyisru" else DynamicTanh(d)
        sd = {k.split(".")[-1]: torch.from_numpy(np.array(v)) for k, v in t.items()
              if k.startswith(name + ".")}
        m.load_state_dict(sd)
        F = L["dropin"][key]
        with torch.no_grad():
            out = m(torch.from_numpy(x32)).numpy().astype(np.float64)
            m64 = m.double()
            out64 = m64(torch.from_numpy(x32.astype(np.float64))).numpy()
        if target is None:
            continue
        r32 = math.sqrt(np.mean((target.astype(np.float64) - out) ** 2))
        r64 = math.sqrt(np.mean((target.astype(np.float64) - out64) ** 2))
        C.rel(F["rmse_vs_real"], r32, 2e-6, f"{label} {key}: PyTorch float32 rmse vs real")
        C.rel(F["rmse_vs_real"], r64, 1e-10, f"{label} {key}: PyTorch float64 rmse vs real")


def load_files(folder):
    return {k: read_st(os.path.join(folder, f)) for k, f in FILES.items()}


def st_write(path, tensors, meta):
    header, off, blobs = {}, 0, []
    for name, a in tensors:
        bts = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(bts)]}
        off += len(bts)
        blobs.append(bts)
    header["__metadata__"] = meta
    hj = json.dumps(header).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))


def llama_dump(path, rng):
    """Three RMSNorm layers named as Hugging Face LLaMA names them: x with
    outlier channels (an S-curve to fit), a weight that is not one value,
    no bias, the real output in float32; d = 96."""
    names = ["model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm",
             "model.norm"]
    tensors, meta, data = [], {}, {}
    for k, m in enumerate(names):
        n, d = 500, 96
        x = rng.standard_normal((n, d)) * np.exp(0.3 * rng.standard_normal((n, 1)))
        x[:, :3] *= 6.0 + 2 * k
        x = x.astype(np.float32)
        w = rng.uniform(0.3, 2.0, d).astype(np.float32)
        y, _ = rmsnorm(x.astype(np.float64), 1e-6)
        out = (y * w).astype(np.float32)
        tensors += [(m + ".input", x), (m + ".output", out), (m + ".weight", w)]
        meta.update({m + ".norm": "rmsnorm", m + ".eps": "1e-06"})
        data[m] = (x, w, out)
    st_write(path, tensors, meta)
    return data


def main():
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory() as tmp:
        # 1. real LayerNorm: weight, bias, real output (weighted fits)
        base = os.path.join(TOP, "data", "vit4mnist", "ln00")
        out = os.path.join(tmp, "vit")
        run("fit", base + "_input.npy", "--out", out, "--quiet")
        rep = json.load(open(os.path.join(out, "report.json")))
        L = rep["layers"][0]
        files = load_files(out)
        x32 = np.load(base + "_input.npy")
        w, b = np.load(base + "_weight.npy"), np.load(base + "_bias.npy")
        real = np.load(base + "_output.npy")
        check_layer("ln00", L, out, files, x32, "layernorm", 1e-5, w, b, real)
        torch_check("ln00", L, files, x32, real)
        C.ok(L["role"] == "unknown" and "depth" not in L, "ln00: no role, no depth")
        C.ok(L["dropin"]["dyt_alpha0"]["alpha"] == 0.5, "ln00: alpha0 0.5 (non-LLM)")
        C.ok(rep["outputs"][:0] == [] and all(f in rep["outputs"] for f in FILES.values()),
             "ln00: the files are listed in outputs")

        # 2. LLaMA names, RMSNorm, weight only, real output; three layers
        dump = os.path.join(tmp, "llama.safetensors")
        data = llama_dump(dump, rng)
        out = os.path.join(tmp, "llama")
        run("fit", dump, "--out", out, "--quiet")
        rep = json.load(open(os.path.join(out, "report.json")))
        files = load_files(out)
        want = {"model.layers.0.input_layernorm": ("attn_norm", 0, 0.8),
                "model.layers.0.post_attention_layernorm": ("mlp_norm", 0, 0.2),
                "model.norm": ("final_norm", None, 0.2)}
        for L in rep["layers"]:
            x32, w, real = data[L["name"]]
            check_layer(L["name"], L, out, files, x32, "rmsnorm", 1e-6, w, None, real)
            role, depth, alpha0 = want[L["name"]]
            C.ok(L["role"] == role and L.get("depth") == depth, f"{L['name']}: role and depth")
            a0 = L["dropin"]["dyt_alpha0"]
            C.ok(a0["alpha"] == alpha0 and a0["llm"] and a0["extrapolated"] and
                 "d = 96 is not in its table" in a0["alpha0_rule"], f"{L['name']}: alpha0 rule")
        torch_check("llama attn_norm", rep["layers"][0], files, data[rep["layers"][0]["name"]][0],
                    data[rep["layers"][0]["name"]][2])
        # the run-level alpha by role, from the per-layer alphas
        roles = rep["run"]["alpha_by_role"]["roles"]
        C.ok([r["role"] for r in roles] == ["attn_norm", "mlp_norm", "final_norm"],
             "alpha_by_role: one row per role, in the order of their first layer")
        for r, L in zip(roles, rep["layers"]):
            a = L["dropin"]["dyt"]["alpha"]
            C.ok(r["layers"] == 1 and r["median"] == a and r["min"] == a and r["max"] == a,
                 f"alpha_by_role {r['role']}: one layer")
            C.ok(r["alpha0"] == want[L["name"]][2] and r["ci"] is None and
                 r["status"].startswith("no bootstrap"), f"alpha_by_role {r['role']}: alpha0, ci")
            C.ok(r["d"] == 96 and r["norm"] == "rmsnorm", f"alpha_by_role {r['role']}: group")

        # 3. no companions: weight 1, bias 0, no real output; a .npy name
        x32 = rng.standard_normal((300, 40)).astype(np.float32)
        x32[:, 0] *= 8
        p = os.path.join(tmp, "plain_input.npy")
        np.save(p, x32)
        out = os.path.join(tmp, "plain")
        run("fit", p, "--out", out, "--quiet", "--alpha0", "0.7")
        L = json.load(open(os.path.join(out, "report.json")))["layers"][0]
        check_layer("plain", L, out, load_files(out), x32, "layernorm", 1e-5, None, None, None)
        C.ok(L["dropin"]["dyt_alpha0"]["alpha"] == 0.7 and
             L["dropin"]["dyt_alpha0"]["alpha0_rule"].startswith("--alpha0 0.7"),
             "plain: --alpha0 overrides the paper's")

        # 4. a weight of one value: the unweighted per-channel fit, reused
        np.save(os.path.join(tmp, "c_input.npy"), x32)
        np.save(os.path.join(tmp, "c_weight.npy"), np.full(40, 1.75, np.float32))
        out = os.path.join(tmp, "const")
        run("fit", os.path.join(tmp, "c_input.npy"), "--out", out, "--quiet")
        L = json.load(open(os.path.join(out, "report.json")))["layers"][0]
        check_layer("const w", L, out, load_files(out), x32, "layernorm", 1e-5,
                    np.full(40, 1.75, np.float32), None, None)
        pc = L["fits"]["dyt_per_channel"]
        C.ok(L["dropin"]["dyt"]["alpha"] == pc["alpha"] and L["dropin"]["dyt"]["iterations"] == 0,
             "const w: the drop-in DyT is the per-channel fit, reused")
        C.rel(1.75 ** 2 * pc["objective"], L["dropin"]["dyt"]["objective"], 1e-15,
              "const w: objective = c^2 times the unweighted one")
    C.done()


main()
