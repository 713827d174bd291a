"""Cross-check of `normcmp fit` against NumPy and SciPy on real and synthetic
layers: input statistics, the real-output check, every fit's parameters
(SciPy's curve_fit / minimize_scalar started from generic guesses, not from
normcmp's answer), the exact error metrics at normcmp's parameters, and the
binned fits against the exact ones.

Tolerances: statistics and metrics at given parameters 1e-10 relative (the
sums are compensated in C, pairwise in NumPy); fitted parameters 1e-6
relative (SciPy stops at its own tolerances, ~1e-8 in the objective); the
SSE at normcmp's optimum must not exceed SciPy's by more than 1e-9
relative; binned against exact parameters 1e-5 relative (the binning error
is O(h^2), see src/analysis/bins.h).
"""
import json
import math
import os
import sys
import tempfile

import numpy as np
from scipy.optimize import curve_fit, minimize_scalar

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker, fit_report, layernorm, rmsnorm, run  # noqa: E402

C = Checker("test_fits")


def dyt(x, a, g, b):
    return g * np.tanh(a * x) + b


def isru(x, Cc, s):
    return s * x / np.sqrt(x * x + Cc)


def derf(x, a, sh, g, b):
    from scipy.special import erf
    return g * erf(a * x + sh) + b


def sse(y, f):
    return float(np.sum((y - f) ** 2))


def check_layer(rep_layer, x, y, scale, norm, eps, label, tol_par=1e-6):
    L = rep_layer
    N, d = x.shape
    xs, ys = x.ravel(), y.ravel()
    st = L["input_stats"]
    C.rel(xs.mean(), st["mean"], 1e-10, f"{label} mean")
    C.rel(xs.std(), st["std"], 1e-10, f"{label} std")
    C.rel(np.sqrt(np.mean(xs * xs)), st["rms"], 1e-10, f"{label} rms")
    C.rel(scale.mean(), st["rho"], 1e-12, f"{label} rho")
    C.rel(xs.min(), st["min"], 0, f"{label} min")
    C.rel(xs.max(), st["max"], 0, f"{label} max")
    fits = L["fits"]

    # affine baseline: closed form
    slope, icpt = np.polyfit(xs, ys, 1)
    C.rel(slope, fits["linear"]["slope"], 1e-10, f"{label} linear slope")
    C.abs(icpt, fits["linear"]["intercept"], 1e-10, f"{label} linear intercept")

    # DyT, free gamma and beta, from a generic start
    sd = xs.std()
    p_dyt, _ = curve_fit(dyt, xs, ys, p0=[1.0 / sd, 1.0, 0.0], maxfev=20000,
                         xtol=1e-14, ftol=1e-14)
    f = fits["dyt"]
    ours = np.array([f["alpha"], f["gamma"], f["beta"]])
    C.rel(p_dyt[0], ours[0], tol_par, f"{label} dyt alpha")
    C.rel(p_dyt[1], ours[1], tol_par, f"{label} dyt gamma")
    C.abs(p_dyt[2], ours[2], tol_par * max(1.0, abs(p_dyt[1])), f"{label} dyt beta")
    C.ok(sse(ys, dyt(xs, *ours)) <= sse(ys, dyt(xs, *p_dyt)) * (1 + 1e-9),
         f"{label} dyt SSE not above SciPy's")

    # DyISRU with the fixed amplitude the report states, and with a free one
    f = fits["dyisru"]
    amp = f["amplitude"]["value"]
    want_amp = math.sqrt(d) if norm == "rmsnorm" else math.sqrt(d - 1)
    C.rel(want_amp, amp, 1e-15, f"{label} dyisru fixed amplitude")
    p_c, _ = curve_fit(lambda x, Cc: isru(x, Cc, amp), xs, ys, p0=[sd * sd * d],
                       bounds=(1e-12, np.inf), xtol=1e-15, ftol=1e-15)
    C.rel(p_c[0], f["C"], tol_par, f"{label} dyisru C")
    f = fits["dyisru_free"]
    p_cs, _ = curve_fit(isru, xs, ys, p0=[sd * sd * d, math.sqrt(d)],
                        bounds=([1e-12, 0], np.inf), xtol=1e-15, ftol=1e-15)
    C.rel(p_cs[0], f["C"], tol_par, f"{label} dyisru_free C")
    C.rel(p_cs[1], f["scale"], tol_par, f"{label} dyisru_free scale")

    # Derf, started from the reference DyT (tanh(z) ~ erf(z sqrt(pi)/2))
    f = fits["derf"]
    p_derf, _ = curve_fit(derf, xs, ys, p0=[p_dyt[0] * 0.8862, 0.0, p_dyt[1], p_dyt[2]],
                          maxfev=20000, xtol=1e-14, ftol=1e-14)
    ours = [f["alpha"], f["shift"], f["gamma"], f["beta"]]
    C.ok(sse(ys, derf(xs, *ours)) <= sse(ys, derf(xs, *p_derf)) * (1 + 1e-9),
         f"{label} derf SSE not above SciPy's ({sse(ys, derf(xs, *ours))} vs "
         f"{sse(ys, derf(xs, *p_derf))})")
    C.rel(p_derf[0], ours[0], 1e-5, f"{label} derf alpha")
    C.rel(p_derf[2], ours[2], 1e-5, f"{label} derf gamma")

    # per-channel DyT: scalar alpha, gamma_i and beta_i by least squares per
    # channel; alpha by a bounded scalar search on log(alpha)
    def profile(la):
        T = np.tanh(np.exp(la) * x)
        tot = 0.0
        for i in range(d):
            A = np.stack([T[:, i], np.ones(N)], axis=1)
            coef, *_ = np.linalg.lstsq(A, y[:, i], rcond=None)
            tot += np.sum((y[:, i] - A @ coef) ** 2)
        return tot
    a0 = math.log(p_dyt[0])
    res = minimize_scalar(profile, bounds=(a0 - 3, a0 + 3), method="bounded",
                          options={"xatol": 1e-10})
    f = fits["dyt_per_channel"]
    C.rel(math.exp(res.x), f["alpha"], 1e-6, f"{label} dyt_per_channel alpha")
    T = np.tanh(f["alpha"] * x)
    g = np.array(f["gamma"])
    b = np.array(f["beta"])
    for i in (0, d // 2, d - 1):
        A = np.stack([T[:, i], np.ones(N)], axis=1)
        coef, *_ = np.linalg.lstsq(A, y[:, i], rcond=None)
        C.rel(coef[0], g[i], 1e-8, f"{label} dyt_per_channel gamma[{i}]")
        C.abs(coef[1], b[i], 1e-8, f"{label} dyt_per_channel beta[{i}]")

    # theory curves: no free parameter (docs/theory.md). Amplitude A = sqrt(d)
    # (RMSNorm) or sqrt(d - 1) (LayerNorm), written in the token's own
    # variable u (x, or x - mu_t): DyT alpha = 1 / (A rho) and DyISRU
    # C = A^2 rho^2 (slope 1/rho at the origin), rho one scale for the layer
    # (the mean token scale) or each token's own
    rho = scale.mean()
    A = math.sqrt(d - 1.0) if norm == "layernorm" else math.sqrt(d)
    C.rel(1 / (A * rho), fits["dyt_theory"]["alpha"], 1e-12, f"{label} theory alpha")
    C.rel(A, fits["dyt_theory"]["gamma"], 1e-15, f"{label} theory gamma")
    C.rel((A * rho) ** 2, fits["dyisru_theory"]["C"], 1e-12, f"{label} theory C")
    C.rel(A, fits["dyisru_theory"]["scale"], 1e-15, f"{label} theory scale")
    C.rel(A, fits["dyt_theory"]["amplitude"]["value"], 1e-15, f"{label} theory amplitude")
    # with each token's own scale s_t (r_t), in u = x - mu_t (LayerNorm) or x
    s_t = scale.reshape(N, 1)
    u = x - x.mean(axis=1, keepdims=True) if norm == "layernorm" else x
    sst_tok = float(np.sum((ys - ys.mean()) ** 2))
    per_token = {
        "dyt_theory": A * np.tanh(u / (A * s_t)),
        "dyisru_theory": A * u / np.sqrt(u * u + (A * s_t) ** 2),
    }
    for name, f in per_token.items():
        t = fits[name]["per_token_scale"]
        r = y - f
        C.rel(np.sqrt(np.mean(r * r)), t["rmse"], 1e-10, f"{label} {name} per-token rmse")
        C.rel(1 - np.sum(r * r) / sst_tok, t["r2"], 1e-10, f"{label} {name} per-token r2")
        C.rel(np.max(np.abs(r)), t["max_abs_err"], 1e-9, f"{label} {name} per-token max")
        C.rel(np.mean(np.abs(r)), t["mean_abs_err"], 1e-10, f"{label} {name} per-token mean")
        C.rel(t["r2"] - fits[name]["r2"], t["r2_lost_to_one_scale"], 1e-9,
              f"{label} {name} r2 lost to one scale")
        C.ok(t["variable"] == ("x - mu_t" if norm == "layernorm" else "x"), f"{label} variable")

    if "jacobian" in rep_layer:
        ode = rep_layer["jacobian"]["ode_check"]
        C.ok(ode["width"] == (d - 1 if norm == "layernorm" else d), f"{label} ode width")
        C.ok(ode["variable"] == ("x - mu" if norm == "layernorm" else "x"), f"{label} ode variable")
    if norm == "layernorm":
        # the theory's one variable (docs/theory.md): moving x_i moves u_i at
        # rate (d-1)/d, so dy_i/du_i = J_ii d/(d-1) = (1/s)(1 - y_i^2/(d-1));
        # J_ii by central differences of the token's LayerNorm
        row, h = x[0].copy(), 1e-6
        for i in (0, d // 3, d - 1):
            e = np.zeros(d)
            e[i] = h
            yp, _ = layernorm((row + e)[None, :], eps)
            ym, _ = layernorm((row - e)[None, :], eps)
            jii = (yp[0, i] - ym[0, i]) / (2 * h)
            y0 = y[0, i]
            C.rel((1 - y0 * y0 / (d - 1)) / scale[0], jii * d / (d - 1), 1e-6,
                  f"{label} dy/du = J_ii d/(d-1), channel {i}")

    # exact metrics at normcmp's own parameters, for every fit
    sst = float(np.sum((ys - ys.mean()) ** 2))
    curves = {
        "linear": lambda p: p["slope"] * xs + p["intercept"],
        "dyt": lambda p: dyt(xs, p["alpha"], p["gamma"], p["beta"]),
        "dyt_theory": lambda p: dyt(xs, p["alpha"], p["gamma"], p["beta"]),
        "dyisru": lambda p: isru(xs, p["C"], p["scale"]),
        "dyisru_free": lambda p: isru(xs, p["C"], p["scale"]),
        "dyisru_theory": lambda p: isru(xs, p["C"], p["scale"]),
        "derf": lambda p: derf(xs, p["alpha"], p["shift"], p["gamma"], p["beta"]),
        "dyt_per_channel": lambda p: (np.array(p["gamma"]) * np.tanh(p["alpha"] * x)
                                      + np.array(p["beta"])).ravel(),
    }
    for name, fn in curves.items():
        p = fits[name]
        r = ys - fn(p)
        C.rel(np.sqrt(np.mean(r * r)), p["rmse"], 1e-10, f"{label} {name} rmse")
        C.rel(1 - np.sum(r * r) / sst, p["r2"], 1e-10, f"{label} {name} r2")
        C.rel(np.max(np.abs(r)), p["max_abs_err"], 1e-10, f"{label} {name} max_abs_err")
    # saturation shares of |alpha x|
    a = fits["dyt"]["alpha"]
    for k in (1, 2, 3):
        C.rel(np.mean(np.abs(a * xs) > k), fits["dyt"]["saturation"][f"abs_alpha_x_gt_{k}"],
              1e-12, f"{label} saturation > {k}")


def real_layer(prefix):
    base = os.path.join(TOP, "data", "vit4mnist", prefix)
    x = np.load(base + "_input.npy").astype(np.float64)
    out = np.load(base + "_output.npy").astype(np.float64)
    w = np.load(base + "_weight.npy").astype(np.float64)
    b = np.load(base + "_bias.npy").astype(np.float64)
    rep = fit_report(base + "_input.npy")
    L = rep["layers"][0]
    y, s = layernorm(x, 1e-5)
    # the recomputed LayerNorm matches the model's own output to float precision
    rec = y * w + b
    C.rel(np.max(np.abs(rec - out)), L["real_output_check"]["max_abs_diff"], 1e-6,
          f"{prefix} real output max diff")
    C.ok(L["real_output_check"]["max_abs_diff"] < 1e-5, f"{prefix} real output matches")
    C.ok(L["fit_data"]["mode"] == "exact", f"{prefix} small layer fitted exactly")
    check_layer(L, x, y, s, "layernorm", 1e-5, prefix)
    return rep


def synth_layer(tmp, preset, norm, eps, dim=48, tokens=700):
    path = os.path.join(tmp, f"{preset}_{norm}.npy")
    run("synth", "-o", path, "--preset", preset, "--tokens", str(tokens), "--dim", str(dim),
        "--seed", "11")
    x = np.load(path).astype(np.float64)
    rep = fit_report(path, "--norm", norm, "--eps", repr(eps))
    y, s = (layernorm if norm == "layernorm" else rmsnorm)(x, eps)
    check_layer(rep["layers"][0], x, y, s, norm, eps, f"synth {preset} {norm}")
    return path, rep


def binned_vs_exact(path):
    exact = fit_report(path)["layers"][0]
    binned = fit_report(path, "--max-exact-points", "1")["layers"][0]
    C.ok(binned["fit_data"]["mode"] == "binned", "binned mode forced")
    for name, keys in (("dyt", ("alpha", "gamma")), ("dyisru", ("C",)),
                       ("dyisru_free", ("C", "scale")), ("derf", ("alpha", "gamma"))):
        for k in keys:
            C.rel(exact["fits"][name][k], binned["fits"][name][k], 1e-5,
                  f"binned vs exact {name} {k}")
        C.rel(exact["fits"][name]["sse"], binned["fits"][name]["sse"], 1e-7,
              f"binned vs exact {name} sse")


def main():
    rep = real_layer("ln11")
    C.ok(rep["tool"]["name"] == "normcmp", "tool name")
    C.ok(len(rep["inputs"]) == 4, "input, output, weight and bias listed")
    import hashlib
    path = os.path.join(TOP, "data", "vit4mnist", "ln11_input.npy")
    with open(path, "rb") as fh:
        C.ok(rep["inputs"][0]["sha256"] == hashlib.sha256(fh.read()).hexdigest(), "sha256")
    real_layer("ln00")
    with tempfile.TemporaryDirectory() as tmp:
        synth_layer(tmp, "late", "layernorm", 1e-5)
        p, _ = synth_layer(tmp, "middle", "rmsnorm", 1e-6)
        binned_vs_exact(p)
    C.done()


if __name__ == "__main__":
    main()
