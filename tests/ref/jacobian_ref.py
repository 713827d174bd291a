#!/usr/bin/python3
"""jacobian_ref.py - an independent NumPy reference for the diagonal-Jacobian
comparison (src/analysis/jacobian.h; docs/jacobian.md, docs/theory.md).

jacobian_metrics() computes, from the input x [N, d] alone (plus optional
upstream gradients, the affine weight and surrogate parameters), every
metric of the comparison (docs/jacobian.md defines them):

    diag_frobenius_share   sum_t sum_i J_ii^2 / sum_t ||J_t||_F^2
    offdiag_frobenius_share sqrt(sum_t sum_{i != j} J_ij^2 / sum_t ||J_t||_F^2)
    radial_retention       sqrt(sum_t ||diag(J_t) y_t||^2 / sum_t ||y_t / scale_t||^2)
    ones_retention         (LayerNorm) sqrt(sum_t ||diag(J_t) 1||^2 / sum_t d / scale_t^2)
    backprop               for D = diag(J) and each surrogate's diag(f'(x)):
                           the exact expectation over Gaussian probes,
                           num_t = ||D - J_t||_F^2 (a plain sum over the d^2
                           entries of the dense difference), den_t =
                           ||J_t||_F^2; err = sqrt(sum num / sum den), and
                           the per-token ratios' mean, median, p95, and the
                           standard errors of the mean (sd / sqrt n) and of
                           the median (half the distance between the
                           quantiles 1/2 -+ 1/(2 sqrt n))
    surrogates[name]       diag_rmse, diag_max_err: J_ii - f'(x_i) over all
                           points, and both over the RMS of J_ii
    backprop_real          the same with num_t = ||D g - J^T g||^2, den_t =
                           ||J^T g||^2 for g = weight * grad (the gradient at
                           the norm's output before the affine part), over
                           the tokens whose g is finite and not all zero;
                           err_se by the delta method (influence of token t:
                           (num_t - R den_t) / (2 err sum den)), and a
                           bootstrap over tokens to check it
    gaussian_reference     the expected pooled values for Gaussian inputs
                           (gaussian_reference(); checked by Monte Carlo in
                           test_jacobian.py)

It is deliberately written differently from the C code: J is materialised
per token as a dense d x d matrix (in chunks of tokens) straight from
the formulas of docs/theory.md, so ||J||_F^2 is a plain sum of squares and J^T g a
matrix product (no closed forms); surrogate derivatives come from their own
formulas here (tanh, erf from SciPy). Quantiles are NumPy's defaults.

compare() checks a layer of report.json against it (test_jacobian.py runs
`normcmp jacobian` on the real activations of data/vit4mnist).
"""

import numpy as np
from scipy import integrate, special

# Tolerances per quantity (relative unless noted), C against this reference.
# Pooled ratios are sums of O(N d) terms in double on both sides: ~1e-16 is
# seen on vit4mnist; 1e-13 leaves room for other summation orders and sizes.
# diag_rmse and diag_max_err subtract two nearly equal numbers where a
# surrogate is good (down to ~1e-6 of J_ii): 1e-10 relative to the value.
# The real-gradient errors are ratios of norms of differences (~1e-15 seen):
# 1e-12.
TOL = {
    "diag_frobenius_share": 1e-13,
    "offdiag_frobenius_share": 1e-11,  # a root of ~1/d of the energy: cancels in the reference
    "backprop_exact": 1e-11,  # per-token sums of d^2 squares against O(d) closed forms
    "se": 1e-9,  # standard errors: sums of squared small differences
    "gauss_ref": 1e-14,
    "radial_retention": 1e-13,
    "ones_retention": 1e-13,
    "diag_rmse": 1e-10,
    "diag_max_err": 1e-10,
    "backprop_rel_err_real": 1e-12,
    "diag_rel": 1e-10,
    "ode_abs": 1e-9,  # both integrators against the closed forms, absolute, y in [0, sqrt d]
}


def token_state(x, norm, eps):
    """y = (x - c) / scale and inv = 1 / scale per token (docs/theory.md)."""
    if norm == "layernorm":
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        scale = np.sqrt(var + eps)
        y = (x - mu) / scale
    else:
        scale = np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
        y = x / scale
    return y, 1.0 / scale[:, 0]


def dense_jacobians(y, inv, norm):
    """J [n, d, d] for a chunk of tokens: inv (I - [1 1^T / d] - y y^T / d)."""
    n, d = y.shape
    J = np.broadcast_to(np.eye(d), (n, d, d)) - np.einsum("ti,tj->tij", y, y) / d
    if norm == "layernorm":
        J = J - 1.0 / d
    return inv[:, None, None] * J


def surrogate_deriv(name, params, x):
    """f'(x) of a surrogate of src/analysis/surrogate.h, x [N, d]."""
    p = params["params"]
    if name == "linear":
        return np.full_like(x, p["slope"])
    if name in ("dyt", "dyt_theory"):
        return p["alpha"] * p["gamma"] / np.cosh(p["alpha"] * x) ** 2
    if name == "dyt_per_channel":
        gamma = np.asarray(params["gamma"])
        return p["alpha"] * gamma[None, :] / np.cosh(p["alpha"] * x) ** 2
    if name in ("dyisru", "dyisru_free", "dyisru_theory"):
        C = p["C"]
        return p["scale"] * C / (x * x + C) ** 1.5
    if name == "derf":
        z = p["alpha"] * x + p["shift"]
        return p["alpha"] * p["gamma"] * 2.0 / np.sqrt(np.pi) * np.exp(-z * z)
    raise ValueError("unknown surrogate " + name)


def quantiles_se(r):
    """mean, median, p95 and their standard errors of per-token ratios r."""
    n = r.size
    out = {"mean": float(r.mean()), "median": float(np.median(r)),
           "p95": float(np.percentile(r, 95)), "n": int(n)}
    out["mean_se"] = float(r.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    # Maritz-Jarrett with the normal approximation of the median's Beta
    # weights (jacobian.h nc_jac_median_se)
    if n > 1:
        from scipy.stats import norm
        s = np.sort(r) - np.median(r)
        cdf = norm.cdf((np.arange(n + 1) / n - 0.5) * 2 * np.sqrt(n))
        w = np.diff(cdf)
        out["median_se"] = float(np.sqrt(max(np.sum(w * s * s) - np.sum(w * s) ** 2, 0)))
    else:
        out["median_se"] = float("nan")
    return out


def ratio_summary(num, den, exact):
    """A backprop error from per-token num, den (see the module docstring)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    if num.size == 0:
        return {"err": float("nan"), "n": 0}
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den > 0, np.sqrt(num / den), np.where(num > 0, np.inf, 0.0))
    out = quantiles_se(r)
    A, B = num.sum(), den.sum()
    R = A / B
    err = np.sqrt(R)
    out["err"] = float(err)
    n = num.size
    if exact or n < 2:
        out["err_se"] = 0.0
    else:
        phi = (num - R * den) / (2 * err * B)
        out["err_se"] = float(np.sqrt(n / (n - 1) * np.sum(phi * phi)))
    return out


def paired_gap_se(num1, num2, den):
    """Delta-method standard error of sqrt(sum num1/sum den) - sqrt(sum num2/sum den)."""
    n = den.size
    B = den.sum()
    R1, R2 = num1.sum() / B, num2.sum() / B
    phi = (num1 - R1 * den) / (2 * np.sqrt(R1) * B) - (num2 - R2 * den) / (2 * np.sqrt(R2) * B)
    return float(np.sqrt(n / (n - 1) * np.sum(phi * phi)))


def bootstrap_se(num, den, reps=1000, seed=2385):
    """The standard error of sqrt(sum num / sum den) by resampling tokens."""
    rng = np.random.default_rng(seed)
    n = num.size
    e = np.empty(reps)
    for k in range(reps):
        i = rng.integers(0, n, n)
        e[k] = np.sqrt(num[i].sum() / den[i].sum())
    return float(e.std(ddof=1))


def gaussian_reference(norm, d):
    """Expected pooled values for i.i.d. Gaussian inputs, eps -> 0
    (docs/jacobian.md), from the sphere moments: y = sqrt(d) u, u uniform
    on the unit sphere of dimension k (d, or d - 1 orthogonal to 1), with
    p = the squared projected axis length (1 or (d - 1)/d):
    E u_i^4 = 3 p^2 / (k (k + 2)), E u_i^6 = 15 p^3 / (k (k + 2) (k + 4))."""
    if norm == "rmsnorm":
        k, p, a, frob = d, 1.0, 1.0, d - 1.0  # ||J||_F^2 / inv^2 with q = 1
    else:
        k, p, a, frob = d - 1, (d - 1) / d, (d - 1) / d, d - 2.0
    m4 = d * 3 * p * p / (k * (k + 2))          # E sum u^4
    m6 = d * 15 * p ** 3 / (k * (k + 2) * (k + 4))  # E sum u^6
    diag = d * a * a - 2 * a + m4                # E sum (a - u_i^2)^2
    out = {"diag_frobenius_share": diag / frob,
           "offdiag_frobenius_share": np.sqrt(1 - diag / frob),
           "radial_retention": np.sqrt(a * a - 2 * a * m4 + m6)}
    out["backprop_rel_err"] = out["offdiag_frobenius_share"]
    if norm == "layernorm":
        out["ones_retention"] = np.sqrt(diag / d)
    return out


def jacobian_metrics(x, norm, eps, grad=None, weight=None, surrogates=None, chunk=256):
    """The metrics of the comparison for one layer (see the module
    docstring). surrogates maps a name to {"params": {...}} (plus "gamma"
    for dyt_per_channel), as the C side reports them. Non-finite tokens are
    left out, as in the C code."""
    x = np.asarray(x, dtype=np.float64).reshape(-1, np.shape(x)[-1])
    x = x[np.all(np.isfinite(x), axis=1)]
    N, d = x.shape
    surrogates = surrogates or {}
    y, inv = token_state(x, norm, eps)
    a = 1.0 - 1.0 / d if norm == "layernorm" else 1.0
    jd = inv[:, None] * (a - y * y / d)  # J_ii from its own formula, not from J

    g = None
    if grad is not None:
        g = np.asarray(grad, dtype=np.float64).reshape(-1, d)
        if weight is not None:
            g = g * np.asarray(weight, dtype=np.float64)[None, :]

    fps = {name: surrogate_deriv(name, p, x) for name, p in surrogates.items()}
    names = ["exact"] + list(fps)
    frob = np.empty(N)
    diag2 = np.empty(N)
    num = {nm: np.empty(N) for nm in names}
    rnum = {nm: [] for nm in names}
    rden = []
    for t0 in range(0, N, chunk):
        J = dense_jacobians(y[t0:t0 + chunk], inv[t0:t0 + chunk], norm)
        sl = slice(t0, t0 + J.shape[0])
        frob[sl] = np.sum(J * J, axis=(1, 2))
        diags = {"exact": np.einsum("tii->ti", J)}
        diags.update({nm: f[sl] for nm, f in fps.items()})
        diag2[sl] = np.sum(diags["exact"] ** 2, axis=1)
        eye = np.eye(d, dtype=bool)
        for nm, D in diags.items():
            # ||D - J||_F^2 over all d^2 entries of the dense difference
            Dm = np.zeros_like(J)
            Dm[:, eye] = D
            num[nm][sl] = np.sum((Dm - J) ** 2, axis=(1, 2))
        if g is None:
            continue
        gc = g[sl]
        keep = np.all(np.isfinite(gc), axis=1) & np.any(gc != 0, axis=1)
        v = np.einsum("tji,tj->ti", J, gc)  # J^T g as a product
        rden.extend(np.sum(v * v, axis=1)[keep])
        for nm, D in diags.items():
            e = D * gc - v
            rnum[nm].extend(np.sum(e * e, axis=1)[keep])

    F = frob.sum()
    out = {
        "tokens": N,
        "diag_frobenius_share": diag2.sum() / F,
        "diag_frobenius_share_from_jd": float(np.sum(jd * jd)) / F,
        "offdiag_frobenius_share": float(np.sqrt(num["exact"].sum() / F)),
        "radial_retention": float(np.sqrt(np.sum((jd * y) ** 2) / np.sum((inv[:, None] * y) ** 2))),
        "ones_retention": (float(np.sqrt(np.sum(jd * jd) / np.sum(d * inv * inv)))
                           if norm == "layernorm" else float("nan")),
        "backprop": ratio_summary(num["exact"], frob, True),
        "gaussian_reference": gaussian_reference(norm, d),
        "surrogates": {},
        "_num": num, "_frob": frob,
    }
    if g is not None:
        rden = np.asarray(rden)
        rnum = {nm: np.asarray(v) for nm, v in rnum.items()}
        out["backprop_real"] = ratio_summary(rnum["exact"], rden, False)
        out["_rnum"], out["_rden"] = rnum, rden
    jd_rms = np.sqrt(np.mean(jd * jd))
    for name, f in fps.items():
        e = jd - f
        s = {"diag_rmse": float(np.sqrt(np.mean(e * e))), "diag_max_err": float(np.max(np.abs(e)))}
        s["diag_rmse_rel"] = s["diag_rmse"] / jd_rms
        s["diag_max_err_rel"] = s["diag_max_err"] / jd_rms
        s["backprop"] = ratio_summary(num[name], frob, True)
        if g is not None:
            s["backprop_real"] = ratio_summary(rnum[name], rden, False)
        out["surrogates"][name] = s
    return out


def ode_reference(rho, d, x_max):
    """ODE-1 and ODE-2 integrated by SciPy's DOP853 (rtol 1e-13) against the
    closed forms sqrt(d) tanh(x / (rho sqrt d)) and sqrt(d) x / sqrt(x^2 +
    d rho^2); ODE-2 from its series at x0 (slope 1/rho at 0)."""
    sd = np.sqrt(d)
    xs = np.linspace(0.0, x_max, 401)
    s1 = integrate.solve_ivp(lambda x, y: (1 - y * y / d) / rho, (0.0, x_max), [0.0],
                             method="DOP853", rtol=1e-13, atol=1e-13, t_eval=xs)
    dev1 = float(np.max(np.abs(s1.y[0] - sd * np.tanh(xs / (rho * sd)))))
    x0 = min(1e-3 * rho * sd, 0.5 * x_max)
    u = x0 * x0 / (d * rho * rho)
    y0 = x0 / rho * (1 - 0.5 * u + 0.375 * u * u)
    xs2 = np.linspace(x0, x_max, 401)
    s2 = integrate.solve_ivp(lambda x, y: (y / x) * (1 - y * y / d), (x0, x_max), [y0],
                             method="DOP853", rtol=1e-13, atol=1e-13, t_eval=xs2)
    dev2 = float(np.max(np.abs(s2.y[0] - sd * xs2 / np.sqrt(xs2 ** 2 + d * rho * rho))))
    return dev1, dev2


# ----------------------------------------------------------------- main

class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.worst = {}

    def rel(self, label, kind, want, got):
        tol = TOL[kind]
        want = float(want)
        got = float("nan") if got is None else float(got)
        diff = abs(got - want) / max(abs(want), 1e-300)
        ok = diff <= tol or (np.isinf(want) and got == want)
        self.worst[kind] = max(self.worst.get(kind, 0.0), 0.0 if np.isinf(want) else diff)
        self.count(ok, "%s: C %.17g, reference %.17g, rel diff %.3g (tol %.0e)"
                   % (label, got, want, diff, tol))

    def count(self, ok, msg):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL " + msg)


def c_value(v):
    if v == "inf":
        return float("inf")
    return v


def compare_summary(chk, label, want, got, kind, exact):
    """A backprop summary of the report against the reference's."""
    chk.rel(label + ".err", kind, want["err"], c_value(got["err"]))
    for q in ("mean", "median", "p95"):
        chk.rel("%s.%s" % (label, q), kind, want[q], c_value(got[q]))
    for q in ("mean_se", "median_se"):
        chk.rel("%s.%s" % (label, q), "se", want[q], got[q])
    if exact:
        chk.count(got["err_se"] == 0 and got["exact"] is True, label + " exact, err_se 0")
    else:
        chk.rel(label + ".err_se", "se", want["err_se"], got["err_se"])
        chk.count(got["exact"] is False, label + " not exact")
    chk.count(want["n"] == got["tokens"], "%s tokens %s vs %s" % (label, want["n"], got["tokens"]))


def ranking(names, errs):
    """Names ordered by err, best first (ties in err by name order as given)."""
    return [n for _, _, n in sorted((e, k, n) for k, (n, e) in enumerate(zip(names, errs)))]


def compare(chk, label, ref, L):
    """The report's layer L (report.json) against the reference ref."""
    j = L["jacobian"]
    for k in ("diag_frobenius_share", "radial_retention", "offdiag_frobenius_share"):
        chk.rel(label + " " + k, k, ref[k], j[k])
    if L["norm"] == "layernorm":
        chk.rel(label + " ones_retention", "ones_retention", ref["ones_retention"],
                j["ones_retention"])
    chk.count(ref["tokens"] == j["tokens"], "%s tokens %s vs %s" % (label, ref["tokens"], j["tokens"]))
    compare_summary(chk, label + " backprop", ref["backprop"], j["backprop"], "backprop_exact", True)
    chk.rel(label + " backprop_rel_err", "backprop_exact", ref["backprop"]["err"],
            j["backprop_rel_err"])
    # the Gaussian reference values at this d
    for k, v in ref["gaussian_reference"].items():
        chk.rel("%s gaussian_reference.%s" % (label, k), "gauss_ref", v,
                j["gaussian_reference"][k])
    if "backprop_real" in ref:
        compare_summary(chk, label + " backprop_real", ref["backprop_real"], j["backprop_real"],
                        "backprop_rel_err_real", False)
        # the delta-method se against a bootstrap over tokens (1000 resamples:
        # the bootstrap's own spread is ~2%)
        bs = bootstrap_se(ref["_rnum"]["exact"], ref["_rden"])
        chk.count(abs(bs - j["backprop_real"]["err_se"]) <= 0.15 * bs,
                  "%s backprop_real.err_se %.4g vs bootstrap %.4g"
                  % (label, j["backprop_real"]["err_se"], bs))
    chk.count(set(ref["surrogates"]) == set(j["surrogates"]), label + " surrogate names")
    for name, s in ref["surrogates"].items():
        cs = j["surrogates"][name]
        for k in ("diag_rmse", "diag_max_err"):
            chk.rel("%s %s.%s" % (label, name, k), k, s[k], cs[k])
        for k in ("diag_rmse_rel", "diag_max_err_rel"):
            chk.rel("%s %s.%s" % (label, name, k), "diag_rel", s[k], cs[k])
        compare_summary(chk, "%s %s.backprop" % (label, name), s["backprop"], cs["backprop"],
                        "backprop_exact", True)
        chk.rel("%s %s.backprop_rel_err" % (label, name), "backprop_exact", s["backprop"]["err"],
                cs["backprop_rel_err"])
        if "backprop_real" in s:
            compare_summary(chk, "%s %s.backprop_real" % (label, name), s["backprop_real"],
                            cs["backprop_real"], "backprop_rel_err_real", False)
    # the rankings: the order of the reference's errs (exact: no ties); for
    # real gradients a tie where the gap is within two paired standard errors
    names = list(ref["surrogates"])
    rk = j["ranking"]["backprop"]
    want = ranking(names, [ref["surrogates"][n]["backprop"]["err"] for n in names])
    got = [e["surrogate"] for e in rk]
    errs = sorted(ref["surrogates"][n]["backprop"]["err"] for n in names)
    distinct = all(b - a > 1e-9 * b for a, b in zip(errs, errs[1:]))
    chk.count(not distinct or got == want, "%s ranking %s vs %s" % (label, got, want))
    chk.count(not any(e["tie_with_previous"] for e in rk), label + " exact ranking has no ties")
    if "backprop_real" in ref:
        rr = j["ranking"]["backprop_real"]
        for prev, cur in zip(rr, rr[1:]):
            a, b = prev["surrogate"], cur["surrogate"]
            se = paired_gap_se(ref["_rnum"][b], ref["_rnum"][a], ref["_rden"])
            chk.rel("%s ranking_real gap_se %s-%s" % (label, b, a), "se", se, cur["gap_se"])
            gap = (ref["surrogates"][b]["backprop_real"]["err"]
                   - ref["surrogates"][a]["backprop_real"]["err"])
            chk.count(gap >= -1e-12 and cur["tie_with_previous"] == (abs(gap) <= 2 * se),
                      "%s ranking_real %s after %s: gap %.3g, se %.3g, tie %s"
                      % (label, b, a, gap, se, cur["tie_with_previous"]))
    # the ODE check: both integrators close to the closed forms
    ode = j["ode_check"]
    d1, d2 = ode_reference(ode["rho"], L["dim"], ode["x_max"])
    for what, v in (("C ode1", ode["ode1_max_dev"]), ("C ode2", ode["ode2_max_dev"]),
                    ("scipy ode1", d1), ("scipy ode2", d2)):
        chk.count(v is not None and v <= TOL["ode_abs"],
                  "%s %s max deviation %s (tol %.0e)" % (label, what, v, TOL["ode_abs"]))
    chk.count(abs(ode["rho"] - L["input_stats"]["rho"]) <= 1e-15 * L["input_stats"]["rho"],
              label + " rho")
    # the dense check (explicit sums over every entry, in double) against the
    # analytic one (C side only): within the rounding bounds gamma_{2d+12}
    # and (d + 16) u, u = 2^-53 (jacobian.h), recomputed here
    dc = j["dense_check"]
    u = 2.0 ** -53
    d = L["dim"]
    bound = (2 * d + 12) * u / (1 - (2 * d + 12) * u)
    chk.count(dc["status"] == "ok", "%s dense_check.status %s" % (label, dc["status"]))
    chk.count(dc.get("max_rel_diff") is not None and dc["max_rel_diff"] <= bound,
              "%s dense max_rel_diff %s (bound %.3g)" % (label, dc.get("max_rel_diff"), bound))
    for k in ("frob_max_rel_diff", "offdiag_max_rel_diff"):
        chk.count(dc.get(k) is not None and dc[k] <= (d + 16) * u,
                  "%s dense %s %s (bound %.3g)" % (label, k, dc.get(k), (d + 16) * u))
    chk.count("dense_gflops" in j["timing"], label + " timing.dense_gflops")
