"""The reference pipeline `make bench` compares normcmp with: what a careful
NumPy + SciPy + Matplotlib notebook does for one layer (BRIEF.md): load,
LayerNorm, fit DyT / DyISRU / affine with curve_fit on all points, and a
rasterized scatter of all points with the curves. Prints the time per stage.
"""
import sys
import time

import numpy as np
from scipy.optimize import curve_fit


def stage(name, t0):
    t = time.perf_counter()
    print(f"  {name:<34} {t - t0:8.2f} s", flush=True)
    return t


def main(path):
    t0 = time.perf_counter()
    x = np.load(path).astype(np.float64)
    t = stage("load (float64)", t0)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-5)
    xs, ys = x.ravel(), y.ravel()
    t = stage("LayerNorm + stats", t)
    a, b = np.polyfit(xs, ys, 1)
    sd = xs.std()
    p_dyt, _ = curve_fit(lambda v, al, g, be: g * np.tanh(al * v) + be, xs, ys,
                         p0=[1 / sd, 1.0, 0.0])
    d = x.shape[1]
    p_isru, _ = curve_fit(lambda v, c: np.sqrt(d - 1) * v / np.sqrt(v * v + c), xs, ys,
                          p0=[d * sd * sd], bounds=(1e-12, np.inf))
    t = stage("fits (affine, DyT, DyISRU)", t)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 6), dpi=200)
    ax.scatter(xs, ys, s=0.1, alpha=0.05, rasterized=True)
    grid = np.linspace(xs.min(), xs.max(), 1000)
    ax.plot(grid, p_dyt[1] * np.tanh(p_dyt[0] * grid) + p_dyt[2], label="DyT")
    ax.plot(grid, np.sqrt(d - 1) * grid / np.sqrt(grid ** 2 + p_isru[0]), label="DyISRU")
    ax.plot(grid, a * grid + b, label="affine")
    ax.legend()
    fig.savefig("/dev/null", format="png")
    stage("scatter of all points + curves", t)
    stage("total", t0)


if __name__ == "__main__":
    main(sys.argv[1])
