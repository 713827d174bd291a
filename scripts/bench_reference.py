"""The reference pipelines `make bench` compares normcmp with
(docs/whole_models.md "Speed against NumPy").

  bench_reference.py FILE.npy             the notebook way: load,
      LayerNorm, curve_fit of DyT / DyISRU / affine on all points, and a
      rasterized Matplotlib scatter of all points with the curves
  bench_reference.py --same-work FILE.npy what `normcmp plot FILE --figure
      scatter --no-jacobian` does, written the fast NumPy way: LayerNorm and
      the input statistics, bins of x with per-bin sums, the pooled fits
      (affine, DyT, DyISRU with fixed and free scale, Derf, the two theory
      curves) on the bin means, DyT with per-channel gamma/beta fitted as
      normcmp fits it (Halley's method on log alpha from the pooled fit, on a
      strided sample of the tokens, then on all of them), the exact error metrics
      (SSE, RMSE, R^2, max and mean absolute error) of every fit and of the
      two theory curves with each token's own scale, over all points, DyT's
      saturation shares, a log-density scatter (np.histogram2d, 1050 x 780)
      with the curves, and a JSON report

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


def chan_sums(x, y, alpha):
    """Per channel: sums over tokens of T = tanh(alpha x), T^2, yT and their
    first three alpha-derivatives (normcmp's channel.c, chan_block)."""
    T = np.tanh(alpha * x)
    T1 = x * (1 - T * T)
    T2 = -2 * x * T * T1
    T3 = -2 * x * (T1 * T1 + T * T2)
    return [T.sum(0), (T * T).sum(0), (y * T).sum(0), T1.sum(0), (T * T1).sum(0),
            (y * T1).sum(0), T2.sum(0), (T1 * T1 + T * T2).sum(0), (y * T2).sum(0),
            T3.sum(0), (3 * T1 * T2 + T * T3).sum(0), (y * T3).sum(0)]


def chan_objective(S, sy, syy, n):
    """The profiled objective S(alpha) = sum_i min_{g,b} sum_t (y - g T - b)^2,
    its first three alpha-derivatives, gamma_i, beta_i and their first two
    alpha-derivatives (normcmp's chan_objective, vectorised over channels)."""
    a, b, cy, a1, b1, cy1, a2, b2, cy2, a3, b3, cy3 = S
    b1, b2, b3 = 2 * b1, 2 * b2, 2 * b3
    det = n * b - a * a
    ok = det > 1e-14 * n * b
    sd = np.where(ok, det, 1.0)
    g = np.where(ok, (n * cy - a * sy) / sd, 0.0)
    bt = np.where(ok, (b * sy - a * cy) / sd, sy / n)
    s0 = np.where(ok, syy - (cy * g + sy * bt), syy - sy * sy / n).sum()
    mz0, mz1 = b1 * g + a1 * bt, a1 * g
    s1 = np.where(ok, -2 * cy1 * g + (g * mz0 + bt * mz1), 0.0).sum()
    r0, r1 = cy1 - mz0, -mz1
    zp0 = np.where(ok, (n * r0 - a * r1) / sd, 0.0)
    zp1 = np.where(ok, (b * r1 - a * r0) / sd, 0.0)
    mzp0, mzp1 = b * zp0 + a * zp1, a * zp0 + n * zp1
    m2z0, m2z1 = b2 * g + a2 * bt, a2 * g
    s2 = np.where(ok, -2 * cy2 * g + (g * m2z0 + bt * m2z1) - 2 * (zp0 * mzp0 + zp1 * mzp1),
                  0.0).sum()
    w0, w1 = cy2 - 2 * (b1 * zp0 + a1 * zp1) - m2z0, -2 * (a1 * zp0) - m2z1
    zpp0 = np.where(ok, (n * w0 - a * w1) / sd, 0.0)
    zpp1 = np.where(ok, (b * w1 - a * w0) / sd, 0.0)
    f3 = (2 * cy3 * g + 2 * cy2 * zp0 + 4 * (zpp0 * mzp0 + zpp1 * mzp1)
          + 2 * (zp0 * (b1 * zp0 + a1 * zp1) + zp1 * (a1 * zp0))
          - 2 * (zp0 * m2z0 + zp1 * m2z1) - (g * (b3 * g + a3 * bt) + bt * (a3 * g)))
    s3 = -np.where(ok, f3, 0.0).sum()
    return g, bt, zp0, zp1, zpp0, zpp1, (s0, s1, s2, s3)


def newton(x, y, u, tol, finish, max_passes=30):
    """Safeguarded Halley iteration on u = log(alpha), one pass over x per
    step, with normcmp's step rules (channel.c, newton_channel)."""
    n = x.shape[0]
    sy, syy = y.sum(0), (y * y).sum(0)
    u_prev, S_prev, step, g, bt = u, np.inf, 0.0, None, None
    for _ in range(max_passes):
        al = np.exp(u)
        g, bt, zp0, zp1, zpp0, zpp1, S = chan_objective(chan_sums(x, y, al), sy, syy, n)
        if S[0] > S_prev and abs(step) > 1e-6:
            step *= 0.5
            u = u_prev + step
            continue
        Su, Suu = al * S[1], al * al * S[2] + al * S[1]
        Suuu = al ** 3 * S[3] + 3 * al * al * S[2] + al * S[1]
        step = -Su / Suu if Suu > 0 else (-0.5 if Su > 0 else 0.5)
        if Suu > 0:
            den = 2 * Suu * Suu - Su * Suuu
            halley = -2 * Su * Suu / den if den != 0 else 0.0
            if 0.5 <= halley / step <= 2:
                step = halley
        step = min(max(step, -0.5), 0.5)
        u_prev, S_prev = u, S[0]
        if abs(step) < tol or Su == 0:
            return u, g, bt
        if abs(step) < finish and Suu > 0:
            da = al * np.expm1(step)
            return u + step, g + zp0 * da + 0.5 * zpp0 * da * da, bt + zp1 * da + 0.5 * zpp1 * da * da
        u += step
    return u_prev, g, bt


def per_channel_newton(x, y, alpha0):
    """DyT with per-channel gamma_i, beta_i as normcmp fits it: Halley's
    method on a strided sample of the tokens (one in 8, at least 2^20 points)
    to 1e-4, then on all tokens to 1e-11, the last step below 1e-4 applied
    along the first two derivatives of (gamma_i, beta_i)."""
    u = np.log(alpha0)
    N, d = x.shape
    m = (N + 7) // 8
    if m < N and m * d >= 1 << 20:
        u, _, _ = newton(x[::8], y[::8], u, 1e-4, 0.0)
    u, g, bt = newton(x, y, u, 1e-11, 1e-4)
    return np.exp(u), g, bt


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
    # the theory curves with one scale rho for the layer (LayerNorm: A = sqrt(d - 1))
    curves["dyt_theory"] = lambda v: A * np.tanh(A * v / (d * rho))
    curves["dyisru_theory"] = lambda v: A * v / np.sqrt(v * v + (d * rho / A) ** 2)
    t = stage("pooled fits on the bins (7)", t)
    alpha, gam, bet = per_channel_newton(x, y, p[0])
    t = stage("DyT per channel: Halley on alpha", t)
    sst = ((ys - ys.mean()) ** 2).sum()
    metrics = {}

    def errors(e):
        a = np.abs(e)
        sse = (a * a).sum()
        return dict(sse=sse, rmse=np.sqrt(sse / e.size), r2=1 - sse / sst, max_abs_err=a.max(),
                    mean_abs_err=a.mean())

    for name, f in curves.items():
        metrics[name] = errors(f(xs) - ys)
    metrics["dyt_per_channel"] = errors((gam * np.tanh(alpha * x) + bet - y).ravel())
    # the theory curves with each token's own scale s_t, in u = x - mu_t
    u = x - mu
    metrics["dyt_theory_token"] = errors((A * np.tanh(A * u / (d * scale)) - y).ravel())
    metrics["dyisru_theory_token"] = errors(
        (A * u / np.sqrt(u * u + (d * scale / A) ** 2) - y).ravel())
    ax = np.abs(p[0] * xs)
    metrics["saturation"] = [float((ax > k).mean()) for k in (1, 2, 3)]
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
    json.dump(dict(stats=stats, metrics=metrics, dyt=p.tolist(), alpha=alpha, gamma=gam.tolist(),
                   beta=bet.tolist()), open("/dev/null", "w"), default=float)
    stage("report (JSON)", t)
    stage("total", t0)


if __name__ == "__main__":
    if sys.argv[1] == "--same-work":
        same_work(sys.argv[2])
    else:
        main(sys.argv[1])
