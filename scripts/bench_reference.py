"""The reference pipelines `make bench` compares normcmp with
(docs/whole_models.md "Speed against NumPy").

  bench_reference.py FILE.npy             the notebook way (BRIEF.md): load,
      LayerNorm, curve_fit of DyT / DyISRU / affine on all points, and a
      rasterized Matplotlib scatter of all points with the curves
  bench_reference.py --same-work FILE.npy what `normcmp plot FILE --figure
      scatter --no-jacobian` does, written the fast NumPy way: LayerNorm and
      the input statistics, bins of x with per-bin sums, the pooled fits
      (affine, DyT, DyISRU with fixed and free scale, Derf, the two theory
      curves) on the bin means, per-channel gamma/beta of DyT, the exact
      error metrics of every fit over all points, a log-density scatter
      (np.histogram2d, 1050 x 780) with the curves, and a JSON report

Prints the time per stage, then "total".
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


def same_work(path):
    import json
    t0 = time.perf_counter()
    x = np.load(path).astype(np.float64)
    N, d = x.shape
    t = stage("load (float64)", t0)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    scale = np.sqrt(var + 1e-5)
    y = (x - mu) / scale
    xs, ys = x.ravel(), y.ravel()
    amax = np.abs(x).max(axis=0)
    top = np.argsort(-amax)[:8]
    stats = dict(mean=xs.mean(), std=xs.std(), rms=np.sqrt((xs * xs).mean()), min=xs.min(),
                 max=xs.max(), rho=scale.mean(), top=top.tolist(),
                 top_rms=np.sqrt((x[:, top] ** 2).mean(axis=0)).tolist())
    t = stage("LayerNorm + stats", t)
    # 32768 bins of x (uniform; normcmp's are uniform near 0, logarithmic in the tails)
    nb = 32768
    idx = np.minimum(((xs - stats["min"]) / (stats["max"] - stats["min"]) * nb).astype(np.int64),
                     nb - 1)
    w = np.bincount(idx, minlength=nb).astype(np.float64)
    sx = np.bincount(idx, weights=xs, minlength=nb)
    sy = np.bincount(idx, weights=ys, minlength=nb)
    keep = w > 0
    w, bx, by = w[keep], sx[keep] / w[keep], sy[keep] / w[keep]
    t = stage("bins of x with per-bin sums", t)
    sig = 1 / np.sqrt(w)
    sd, rho = stats["std"], stats["rho"]
    curves = {}
    a, b = np.polyfit(bx, by, 1, w=np.sqrt(w))
    curves["linear"] = lambda v, a=a, b=b: a * v + b
    f_dyt = lambda v, al, g, be: g * np.tanh(al * v) + be
    p, _ = curve_fit(f_dyt, bx, by, p0=[1 / sd, 1.0, 0.0], sigma=sig)
    curves["dyt"] = lambda v, p=p: f_dyt(v, *p)
    A = np.sqrt(d - 1)
    f_isru = lambda v, c: A * v / np.sqrt(v * v + c)
    q, _ = curve_fit(f_isru, bx, by, p0=[d * sd * sd], sigma=sig, bounds=(1e-12, np.inf))
    curves["dyisru"] = lambda v, q=q: f_isru(v, *q)
    f_isru2 = lambda v, s, c: s * v / np.sqrt(v * v + c)
    q2, _ = curve_fit(f_isru2, bx, by, p0=[A, q[0]], sigma=sig, bounds=(1e-12, np.inf))
    curves["dyisru_free"] = lambda v, q2=q2: f_isru2(v, *q2)
    from scipy.special import erf
    f_derf = lambda v, al, sh, g, be: g * erf(al * v + sh) + be
    r, _ = curve_fit(f_derf, bx, by, p0=[p[0], 0.0, p[1], p[2]], sigma=sig, maxfev=2000)
    curves["derf"] = lambda v, r=r: f_derf(v, *r)
    curves["dyt_theory"] = lambda v: np.sqrt(d) * np.tanh(v / (rho * np.sqrt(d)))
    curves["dyisru_theory"] = lambda v: np.sqrt(d) * v / np.sqrt(v * v + d * rho * rho)
    t = stage("pooled fits on the bins (7)", t)
    th = np.tanh(p[0] * x)  # per channel: y ~ gamma_i tanh(alpha x) + beta_i
    st, stt = th.sum(axis=0), (th * th).sum(axis=0)
    sy_c, sty = y.sum(axis=0), (th * y).sum(axis=0)
    den = N * stt - st * st
    gam = (N * sty - st * sy_c) / den
    bet = (sy_c - gam * st) / N
    t = stage("DyT per channel gamma, beta", t)
    sst = ((ys - ys.mean()) ** 2).sum()
    metrics = {}
    for name, f in curves.items():
        e = f(xs) - ys
        sse = (e * e).sum()
        metrics[name] = dict(sse=sse, rmse=np.sqrt(sse / e.size), r2=1 - sse / sst,
                             max_abs_err=np.abs(e).max(), mean_abs_err=np.abs(e).mean())
    e = (gam * th + bet - y).ravel()
    sse = (e * e).sum()
    metrics["dyt_per_channel"] = dict(sse=sse, r2=1 - sse / sst, max_abs_err=np.abs(e).max())
    t = stage("exact metrics of every fit", t)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    H, xe, ye = np.histogram2d(xs, ys, bins=(1050, 780))
    fig, ax = plt.subplots(figsize=(7, 5.2), dpi=150)
    ax.imshow(np.log1p(H.T), origin="lower", aspect="auto", cmap="Blues",
              extent=(xe[0], xe[-1], ye[0], ye[-1]))
    grid = np.linspace(xe[0], xe[-1], 400)
    for name in ("linear", "dyt", "dyisru"):
        ax.plot(grid, curves[name](grid), label=name)
    ax.set_ylim(ye[0], ye[-1])
    ax.legend()
    fig.savefig("/dev/null", format="png")
    t = stage("density scatter + curves (PNG)", t)
    json.dump(dict(stats=stats, metrics=metrics, dyt=p.tolist(), gamma=gam.tolist(),
                   beta=bet.tolist()), open("/dev/null", "w"), default=float)
    stage("report (JSON)", t)
    stage("total", t0)


if __name__ == "__main__":
    if sys.argv[1] == "--same-work":
        same_work(sys.argv[2])
    else:
        main(sys.argv[1])
