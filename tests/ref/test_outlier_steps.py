"""The outlier-steps experiment as the DyISRU paper published it, and its
spread over draws, against NumPy/SciPy.

configs/outlier_steps_paper.json must give the published numbers (d = 100,
eps = 0, np.random.seed(1); np.random.normal(0, 2, 100), the largest value
pushed up by 5k, k = 1..9, LayerNorm, DyT and DyISRU with amplitude
sqrt(d - 1) fitted to the mirrored outlier points): DyT alpha = 0.04861 with
mean |residual| 0.328, DyISRU C = 301.06 with mean |residual| 0.00481. The
same protocol recomputed here in float64 NumPy/SciPy from NumPy's own
draws gives the single draw to 1e-6 and the quantiles over seeds 1..1000
(np.percentile, linear) to 1e-5, and `synth --rng numpy` writes NumPy's
draws (rounded to float32) bit for bit.
"""
import json
import os
import tempfile

import numpy as np
from scipy.optimize import curve_fit

from common import TOP, Checker, run

C = Checker("test_outlier_steps.py")
D, STEPS = 100, 9
AMP = np.sqrt(D - 1)


def protocol(seed):
    """(alpha, DyT mean |res|, C, DyISRU mean |res|, |mean of the others|)."""
    np.random.seed(seed)
    base = np.random.normal(0, 2, D).astype(np.float32)  # normcmp stores float32
    c = int(np.argmax(base))
    xs, ys = [], []
    for k in range(1, STEPS + 1):
        row = base.copy()
        row[c] = base[c] + np.float32(5 * k)
        row = row.astype(np.float64)
        u = row - row.mean()
        xs.append(row[c])
        ys.append(u[c] / np.sqrt(np.mean(u * u)))
    x = np.r_[xs, -np.array(xs)]
    y = np.r_[ys, -np.array(ys)]
    dyt = lambda v, a: AMP * np.tanh(a * v)
    isru = lambda v, cc: AMP * v / np.sqrt(v * v + cc)
    (a,), _ = curve_fit(dyt, x, y, p0=[1.0 / np.std(base) / np.sqrt(D)], xtol=1e-14, ftol=1e-14)
    (cc,), _ = curve_fit(isru, x, y, p0=[D * np.var(base)], xtol=1e-14, ftol=1e-14)
    others = (base.astype(np.float64).sum() - base[c]) / (D - 1)
    return (a, np.mean(np.abs(y - dyt(x, a))), cc, np.mean(np.abs(y - isru(x, cc))),
            abs(others))


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "out")
    run("run", os.path.join(TOP, "configs", "outlier_steps_paper.json"), "--out", out, "--quiet")
    rep = json.load(open(os.path.join(out, "report.json")))
    os_ = rep["layers"][0]["outlier_steps"]

    # the published numbers, at the precision they were published with
    C.abs(0.04861, os_["dyt"]["alpha"], 5e-6, "published DyT alpha")
    C.abs(0.328, os_["dyt"]["mean_abs_residual"], 5e-4, "published DyT mean |residual|")
    C.abs(301.06, os_["dyisru"]["C"], 5e-3, "published DyISRU C")
    C.abs(0.00481, os_["dyisru"]["mean_abs_residual"], 5e-6, "published DyISRU mean |residual|")
    C.abs(68.1, os_["ratio_dyt_to_dyisru"], 0.05, "published ratio")
    C.ok(os_["amplitude"] == float(np.sqrt(99.0)), "amplitude sqrt(d - 1)")

    # the same protocol in NumPy/SciPy
    a, r1, cc, r2, _ = protocol(1)
    C.rel(a, os_["dyt"]["alpha"], 1e-6, "seed 1: alpha vs SciPy")
    C.rel(r1, os_["dyt"]["mean_abs_residual"], 1e-6, "seed 1: DyT residual vs SciPy")
    C.rel(cc, os_["dyisru"]["C"], 1e-6, "seed 1: C vs SciPy")
    C.rel(r2, os_["dyisru"]["mean_abs_residual"], 1e-5, "seed 1: DyISRU residual vs SciPy")

    # the spread over seeds 1..1000
    sp = os_["spread"]
    C.ok(sp["draws"] == 1000 and sp["seed_first"] == 1 and sp["seed_last"] == 1000
         and sp["rng"] == "numpy", "spread: seeds 1..1000, numpy")
    R = np.array([protocol(s) for s in range(1, 1001)])
    ratio = R[:, 1] / R[:, 3]
    cols = {"ratio_dyt_to_dyisru": ratio, "dyt_mean_abs_residual": R[:, 1],
            "dyisru_mean_abs_residual": R[:, 3], "abs_mean_others": R[:, 4],
            "ratio_times_abs_mean_others": ratio * R[:, 4]}
    for name, v in cols.items():
        q = sp[name]
        for key, want in (("median", np.median(v)), ("p05", np.percentile(v, 5)),
                          ("p95", np.percentile(v, 95)), ("min", v.min()), ("max", v.max())):
            tol = 1e-3 if key == "max" and name.startswith("ratio") else 1e-5
            C.rel(want, q[key], tol, f"spread {name} {key}")
    # what docs/outlier_steps.md states about them
    C.ok(35 < sp["ratio_dyt_to_dyisru"]["median"] < 45, "ratio median about 40")
    C.ok(0.30 < sp["dyt_mean_abs_residual"]["p05"] and sp["dyt_mean_abs_residual"]["p95"] < 0.35,
         "DyT residual 5-95% within 0.30 .. 0.35")

    # synth --rng numpy: NumPy's draws, rounded to float32, bit for bit
    for seed in (1, 2, 99, 4294967295):
        f = os.path.join(tmp, f"s{seed}.npy")
        run("synth", "-o", f, "--preset", "outlier-steps", "--rng", "numpy", "--seed", str(seed))
        x = np.load(f)
        np.random.seed(seed)
        base = np.random.normal(0, 2, D).astype(np.float32)
        c = int(np.argmax(base))
        want = np.repeat(base[None, :], STEPS, axis=0)
        want[:, c] = base[c] + (5.0 * np.arange(1, STEPS + 1)).astype(np.float32)
        C.ok(x.dtype == np.float32 and np.array_equal(x.view(np.uint32), want.view(np.uint32)),
             f"synth --rng numpy --seed {seed}: NumPy's tokens bit for bit")

    # --dtype f64: NumPy's float64 draws themselves, never rounded to float32
    for seed in (1, 7):
        f = os.path.join(tmp, f"d{seed}.npy")
        run("synth", "-o", f, "--preset", "outlier-steps", "--rng", "numpy", "--seed", str(seed),
            "--dim", str(D), "--dtype", "f64")
        x = np.load(f)
        np.random.seed(seed)
        base = np.random.normal(0, 2, D)
        c = int(np.argmax(base))
        want = np.repeat(base[None, :], STEPS, axis=0)
        want[:, c] = base[c] + 5.0 * np.arange(1, STEPS + 1)
        C.ok(x.dtype == np.float64 and x.shape == want.shape
             and np.array_equal(x[:, np.arange(D) != c].view(np.uint64),
                                want[:, np.arange(D) != c].view(np.uint64))
             and np.array_equal(x.view(np.uint64), want.view(np.uint64)),
             f"synth --rng numpy --seed {seed} --dtype f64: np.random.normal(0, 2, {D}) "
             "bit for bit, outlier raised by 5k in double")

C.done()
