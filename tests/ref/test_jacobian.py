"""The diagonal-Jacobian comparison through the real command line against an
independent NumPy reference (tests/ref/jacobian_ref.py: dense Jacobians
built per token from BRIEF.md's formulas, sums of squares and products, no
closed forms).

Cases: the three vit4mnist layers under LayerNorm (eps 1e-5, as recorded)
and RMSNorm (eps 1e-6), with the layer's weight and a seeded upstream
gradient (two of its rows zero, left out as carrying no information), given
to `normcmp jacobian` as --weight and --grad-output. Tolerances per
quantity are jacobian_ref.TOL (1e-13 for pooled ratios, 1e-10 for the
surrogate diagonal errors, 1e-12 for real-gradient errors); the ODE check
and the dense OpenBLAS product are checked against their bounds.
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jacobian_ref as R  # noqa: E402
from common import TOP, run  # noqa: E402


def c_view(L):
    """The report's layer, in the shape jacobian_ref.compare() reads."""
    j = L["jacobian"]

    def summ(s):
        return {"mean": s["mean"], "median": s["median"], "p95": s["p95"], "n": s["tokens"]}

    surr = {}
    for name, s in j["surrogates"].items():
        e = {"diag_rmse": s["diag_rmse"], "diag_max_err": s["diag_max_err"]}
        if "backprop_rel_err_real" in s:
            e["backprop_rel_err_real"] = summ(s["backprop_rel_err_real"])
        surr[name] = e
    return {
        "norm": L["norm"], "d": L["dim"], "rho": L["input_stats"]["rho"],
        "tokens": j["tokens"],
        "diag_frobenius_share": j["diag_frobenius_share"],
        "radial_retention": j["radial_retention"],
        "ones_retention": j.get("ones_retention"),
        "backprop_rel_err_real": summ(j["backprop_rel_err_real"]),
        "surrogates": surr,
        "ode_check": j["ode_check"],
        "dense_max_rel_diff": j["dense_max_rel_diff"],
        "dense_frob_max_rel_diff": j["dense_frob_max_rel_diff"],
        "dense_status": j["dense_status"],
    }


def surrogate_params(L):
    """The fitted parameters, as jacobian_ref.surrogate_deriv() reads them."""
    out = {}
    for name, f in L["fits"].items():
        if name not in L["jacobian"]["surrogates"]:
            continue
        p = {k: v for k, v in f.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        e = {"params": p}
        if name == "dyt_per_channel":
            e["gamma"] = f["gamma"]
        out[name] = e
    return out


def main():
    chk = R.Checker()
    data = os.path.join(TOP, "data", "vit4mnist")
    with tempfile.TemporaryDirectory() as tmp:
        k = 0
        for layer in ("ln00", "ln05", "ln11"):
            for norm, eps in (("layernorm", 1e-5), ("rmsnorm", 1e-6)):
                xin = os.path.join(data, layer + "_input.npy")
                win = os.path.join(data, layer + "_weight.npy")
                x = np.load(xin)
                w = np.load(win)
                rng = np.random.default_rng(2385 + k)
                k += 1
                grad = rng.standard_normal(x.shape).astype(np.float32)
                grad[7] = 0.0
                grad[1000] = 0.0
                gpath = os.path.join(tmp, "grad.npy")
                np.save(gpath, grad)
                out = os.path.join(tmp, f"out{k}")
                run("jacobian", xin, "--norm", norm, "--eps", repr(eps), "--weight", win,
                    "--grad-output", gpath, "--out", out, "--quiet")
                L = json.load(open(os.path.join(out, "report.json")))["layers"][0]
                ref = R.jacobian_metrics(x, norm, eps, grad=grad, weight=w,
                                         surrogates=surrogate_params(L))
                label = f"{layer}/{norm}"
                chk.count(L["jacobian"]["real_weighted"] is True, label + " real_weighted")
                R.compare(chk, label, ref, c_view(L))
    for kind, v in sorted(chk.worst.items()):
        print("worst relative difference %-22s %.3g (tol %.0e)" % (kind, v, R.TOL[kind]))
    print("test_jacobian: %d passed, %d failed" % (chk.passed, chk.failed))
    sys.exit(1 if chk.failed else 0)


if __name__ == "__main__":
    main()
