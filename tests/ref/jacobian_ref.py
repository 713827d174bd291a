#!/usr/bin/python3
"""jacobian_ref.py - an independent NumPy reference for the diagonal-Jacobian
comparison (src/analysis/jacobian.h; BRIEF.md, "The gradient derivation").

jacobian_metrics() computes, from the input x [N, d] alone (plus optional
upstream gradients, the affine weight and surrogate parameters), every
pooled metric of the comparison that does not depend on random probes:

    diag_frobenius_share   sum_t sum_i J_ii^2 / sum_t ||J_t||_F^2
    radial_retention       sqrt(sum_t ||diag(J_t) y_t||^2 / sum_t ||y_t / scale_t||^2)
    ones_retention         (LayerNorm) sqrt(sum_t ||diag(J_t) 1||^2 / sum_t d / scale_t^2)
    surrogates[name]       diag_rmse, diag_max_err: J_ii - f'(x_i) over all points
    backprop_rel_err_real  ||diag(J) g - J^T g|| / ||J^T g|| per token with
                           g = weight * grad (the gradient at the norm's output
                           before the affine part), mean/median/p95 over the
                           tokens whose g is finite and not all zero; also per
                           surrogate with diag(f'(x))

It is deliberately written differently from the C code: J is materialised
per token as a dense d x d matrix (in chunks of tokens) straight from
BRIEF.md's formulas, so ||J||_F^2 is a plain sum of squares and J^T g a
matrix product (no closed forms); surrogate derivatives come from their own
formulas here (tanh, erf from SciPy). Quantiles are NumPy's defaults.

main() cross-checks the C implementation on the real activations of
data/vit4mnist (ln00, ln05, ln11; LayerNorm with eps 1e-5 as recorded, and
RMSNorm with eps 1e-6 on the same inputs), with a seeded synthetic upstream
gradient (the dumps carry none; two of its rows are zero) and the layer's
weight. The C numbers come from a program that prints them as JSON:

    jacobian_ref.py --driver PROG      runs PROG INPUT.npy NORM EPS --weight W.npy --grad G.npy
    jacobian_ref.py --json FILE ...    compares with saved outputs instead

(until the CLI exposes the comparison, PROG is a small driver around
nc_layer_analyze + nc_jacobian_run; the surrogate parameters are taken from
its output). Prints one line per check and a final "N passed, M failed".
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

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
    "radial_retention": 1e-13,
    "ones_retention": 1e-13,
    "diag_rmse": 1e-10,
    "diag_max_err": 1e-10,
    "backprop_rel_err_real": 1e-12,
    "ode_abs": 1e-9,  # both integrators against the closed forms, absolute, y in [0, sqrt d]
}


def token_state(x, norm, eps):
    """y = (x - c) / scale and inv = 1 / scale per token (BRIEF.md "The objects")."""
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


def summary(v):
    v = np.asarray(v, dtype=np.float64)
    if v.size == 0:
        return {"mean": float("nan"), "median": float("nan"), "p95": float("nan"), "n": 0}
    return {"mean": float(v.mean()), "median": float(np.median(v)),
            "p95": float(np.percentile(v, 95)), "n": int(v.size)}


def jacobian_metrics(x, norm, eps, grad=None, weight=None, surrogates=None, chunk=256):
    """The probe-free metrics of the comparison for one layer (see the module
    docstring). surrogates maps a name to {"params": {...}} (plus "gamma" for
    dyt_per_channel), as the C side reports them. Non-finite tokens are left
    out, as in the C code."""
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

    frob = 0.0
    diag2 = 0.0
    real_err = {"exact": []}
    fps = {name: surrogate_deriv(name, p, x) for name, p in surrogates.items()}
    for name in fps:
        real_err[name] = []
    for t0 in range(0, N, chunk):
        J = dense_jacobians(y[t0:t0 + chunk], inv[t0:t0 + chunk], norm)
        frob += float(np.sum(J * J))
        diag2 += float(np.sum(np.einsum("tii->ti", J) ** 2))
        if g is None:
            continue
        gc = g[t0:t0 + chunk]
        keep = np.all(np.isfinite(gc), axis=1) & np.any(gc != 0, axis=1)
        v = np.einsum("tji,tj->ti", J, gc)  # J^T g as a product
        vn = np.linalg.norm(v, axis=1)
        diags = {"exact": np.einsum("tii->ti", J)}
        diags.update({n: f[t0:t0 + chunk] for n, f in fps.items()})
        for name, D in diags.items():
            en = np.linalg.norm(D * gc - v, axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(vn > 0, en / vn, np.where(en > 0, np.inf, 0.0))
            real_err[name].extend(rel[keep])

    out = {
        "tokens": N,
        "diag_frobenius_share": diag2 / frob,
        "diag_frobenius_share_from_jd": float(np.sum(jd * jd)) / frob,
        "radial_retention": float(np.sqrt(np.sum((jd * y) ** 2) / np.sum((inv[:, None] * y) ** 2))),
        "ones_retention": (float(np.sqrt(np.sum(jd * jd) / np.sum(d * inv * inv)))
                           if norm == "layernorm" else float("nan")),
        "surrogates": {},
    }
    if g is not None:
        out["backprop_rel_err_real"] = summary(real_err["exact"])
    for name, f in fps.items():
        e = jd - f
        s = {"diag_rmse": float(np.sqrt(np.mean(e * e))), "diag_max_err": float(np.max(np.abs(e)))}
        if g is not None:
            s["backprop_rel_err_real"] = summary(real_err[name])
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


def compare(chk, label, ref, c):
    for k in ("diag_frobenius_share", "radial_retention"):
        chk.rel(label + " " + k, k, ref[k], c[k])
    if c["norm"] == "layernorm":
        chk.rel(label + " ones_retention", "ones_retention", ref["ones_retention"],
                c["ones_retention"])
    chk.count(ref["tokens"] == c["tokens"],
              "%s tokens %s vs %s" % (label, ref["tokens"], c["tokens"]))
    if "backprop_rel_err_real" in ref:
        for q in ("mean", "median", "p95"):
            chk.rel("%s backprop_rel_err_real.%s" % (label, q), "backprop_rel_err_real",
                    ref["backprop_rel_err_real"][q], c_value(c["backprop_rel_err_real"][q]))
        chk.count(ref["backprop_rel_err_real"]["n"] == c["backprop_rel_err_real"]["n"],
                  label + " backprop_rel_err_real.n")
    chk.count(set(ref["surrogates"]) == set(c["surrogates"]), label + " surrogate names")
    for name, s in ref["surrogates"].items():
        cs = c["surrogates"][name]
        for k in ("diag_rmse", "diag_max_err"):
            chk.rel("%s %s.%s" % (label, name, k), k, s[k], cs[k])
        if "backprop_rel_err_real" in s:
            for q in ("mean", "median", "p95"):
                chk.rel("%s %s.backprop_rel_err_real.%s" % (label, name, q),
                        "backprop_rel_err_real", s["backprop_rel_err_real"][q],
                        c_value(cs["backprop_rel_err_real"][q]))
    # the ODE check: both integrators close to the closed forms
    ode = c["ode_check"]
    d1, d2 = ode_reference(ode["rho"], c["d"], ode["x_max"])
    for what, v in (("C ode1", ode["ode1_max_dev"]), ("C ode2", ode["ode2_max_dev"]),
                    ("scipy ode1", d1), ("scipy ode2", d2)):
        chk.count(v is not None and v <= TOL["ode_abs"],
                  "%s %s max deviation %s (tol %.0e)" % (label, what, v, TOL["ode_abs"]))
    chk.count(abs(ode["rho"] - c["rho"]) <= 1e-15 * c["rho"], label + " rho")
    # the dense OpenBLAS product (float J, sgemm) against the analytic one (C
    # side only): within the rounding bound gamma_{d+3} of a float dot
    # product of length d, relative to the size of the summed terms
    # (jacobian.h), recomputed here rather than taken from the C output
    u = 2.0 ** -24
    bound = (c["d"] + 3) * u / (1 - (c["d"] + 3) * u)
    chk.count(c["dense_max_rel_diff"] is not None and c["dense_max_rel_diff"] <= bound,
              "%s dense_max_rel_diff %s (bound %.3g)" % (label, c["dense_max_rel_diff"], bound))
    chk.count(c["dense_frob_max_rel_diff"] is not None and c["dense_frob_max_rel_diff"] <= 3 * u,
              "%s dense_frob_max_rel_diff %s (bound %.3g)"
              % (label, c["dense_frob_max_rel_diff"], 3 * u))
    if "dense_status" in c:
        chk.count(c["dense_status"] == "ok", "%s dense_status %s" % (label, c["dense_status"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--driver", help="program printing the C metrics as JSON")
    ap.add_argument("--json", nargs="*", help="saved C outputs, in the order of the cases")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "data", "vit4mnist"))
    ap.add_argument("--layers", default="ln00,ln05,ln11")
    args = ap.parse_args()
    if not args.driver and not args.json:
        ap.error("give --driver PROG or --json FILE...")

    chk = Checker()
    cases = [(layer, norm, eps) for layer in args.layers.split(",")
             for norm, eps in (("layernorm", 1e-5), ("rmsnorm", 1e-6))]
    with tempfile.TemporaryDirectory() as tmp:
        for k, (layer, norm, eps) in enumerate(cases):
            xin = os.path.join(args.data, layer + "_input.npy")
            win = os.path.join(args.data, layer + "_weight.npy")
            x = np.load(xin)
            w = np.load(win)
            rng = np.random.default_rng(2385 + k)
            grad = rng.standard_normal(x.shape).astype(np.float32)
            grad[7] = 0.0  # left out as carrying no information
            grad[1000] = 0.0
            gpath = os.path.join(tmp, "grad.npy")
            np.save(gpath, grad)
            if args.json:
                with open(args.json[k]) as f:
                    c = json.load(f)
            else:
                res = subprocess.run([args.driver, xin, norm, repr(eps), "--weight", win,
                                      "--grad", gpath], check=True, capture_output=True,
                                     text=True)
                c = json.loads(res.stdout)
            ref = jacobian_metrics(x, norm, eps, grad=grad, weight=w, surrogates=c["surrogates"])
            label = "%s/%s" % (layer, norm)
            # the reference's two routes to the share agree with each other
            chk.rel(label + " share (dense J vs own diagonal)", "diag_frobenius_share",
                    ref["diag_frobenius_share"], ref["diag_frobenius_share_from_jd"])
            compare(chk, label, ref, c)
            print("%-16s share %.12f radial %.9f real mean %.6f (C %.6f); C ODE devs %.2g %.2g"
                  % (label, ref["diag_frobenius_share"], ref["radial_retention"],
                     ref["backprop_rel_err_real"]["mean"], c["backprop_rel_err_real"]["mean"],
                     c["ode_check"]["ode1_max_dev"], c["ode_check"]["ode2_max_dev"]))
    for kind, v in sorted(chk.worst.items()):
        print("worst relative difference %-22s %.3g (tol %.0e)" % (kind, v, TOL[kind]))
    print("jacobian_ref: %d passed, %d failed" % (chk.passed, chk.failed))
    return 1 if chk.failed else 0


if __name__ == "__main__":
    sys.exit(main())
