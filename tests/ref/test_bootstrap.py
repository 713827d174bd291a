"""Cross-check of the token bootstrap (docs/report.md, "Uncertainty from the
tokens"; src/analysis/boot.c, layer_boot.c) with NumPy and SciPy.

1. The same replicates, recomputed independently: normcmp's draws come from
   its documented generator (xoshiro256** seeded through splitmix64, stream
   r of seed ^ "tokboot", Lemire's multiply-shift index), ported here; the
   block sums come from NumPy's own recomputation of the norm, every fit
   (at normcmp's parameters), the dense Jacobian of every token, DyT's and
   the affine map's scores. Every interval and standard error of
   layers[].bootstrap must then agree to 1e-8 (the run replicates to their
   7 printed digits).
2. The linearised refit is a good refit: on a small layer, alpha's and the
   affine slope's standard errors from a bootstrap that refits every
   replicate with SciPy (least_squares) agree with normcmp's within 15%.
3. The decisions the issue asked for, on layers built to sit at them: a
   label that flips under resampling at the old cut (0.1 of the affine
   residual removed) is "undecided"; a winner by R^2 whose gap the tokens
   do not support is a tie; two models of the same d are two groups.

Runs on data/vit4mnist (LayerNorm, by sequences of 17 tokens and token by
token) and synthetic RMSNorm layers (one with a fixed DyT amplitude)."""
import json
import math
import os
import sys
import tempfile

import numpy as np
from scipy import optimize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker, layernorm, rmsnorm, run  # noqa: E402

C = Checker("test_bootstrap")
M64 = (1 << 64) - 1
DATA = os.path.join(TOP, "data", "vit4mnist")
RANKED = ["dyt", "dyisru", "dyisru_free", "dyt_theory", "dyisru_theory", "derf"]
TAG = 0x746F6B626F6F74  # "tokboot"


# ---------------------------------------------------------------- generator

def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def seed_state(seed, stream):
    sm = seed ^ mix(stream)
    s = []
    for _ in range(4):
        sm = (sm + 0x9E3779B97F4A7C15) & M64
        s.append(mix(sm))
    return s


def counts(seed, nb, B):
    """Multinomial counts [B, nb]: replicate r draws nb block indices from
    stream r (xoshiro256**, vectorised over replicates)."""
    st = np.array([seed_state(seed ^ TAG, r) for r in range(B)], dtype=np.uint64).T.copy()
    s0, s1, s2, s3 = st
    out = np.zeros((B, nb), dtype=np.int64)
    rows = np.arange(B)
    n = np.uint64(nb)
    thr = (1 << 64) % nb  # 2^64 mod n: reject low products below it

    def rotl(x, k):
        return (x << np.uint64(k)) | (x >> np.uint64(64 - k))

    def step():
        nonlocal s0, s1, s2, s3
        res = rotl(s1 * np.uint64(5), 7) * np.uint64(9)
        t = s1 << np.uint64(17)
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        return res

    with np.errstate(over="ignore"):
        for _ in range(nb):
            v = step()
            lo = v * n  # the low 64 bits of v n (wrapping)
            hi = ((v >> np.uint64(32)) * n + (((v & np.uint64(0xFFFFFFFF)) * n) >> np.uint64(32))) \
                >> np.uint64(32)
            # normcmp draws again when the low product is below 2^64 mod n: a
            # chance of n / 2^64 (< 1e-16) per draw, so never seen here
            if (lo < np.uint64(thr)).any():
                raise RuntimeError("a rejected draw: not ported")
            np.add.at(out, (rows, hi.astype(np.int64)), 1)
    return out


# ------------------------------------------------------------------ the fits

def isru(x, C_, s):
    return s * x / np.sqrt(x * x + C_)


def fit_f(name, p, x):
    """f and f' of a fit at its reported parameters (x [N, d])."""
    if name == "linear":
        return p["slope"] * x + p["intercept"], np.full_like(x, p["slope"])
    if name in ("dyt", "dyt_theory"):
        T = np.tanh(p["alpha"] * x)
        return p["gamma"] * T + p["beta"], p["gamma"] * p["alpha"] * (1 - T * T)
    if name == "dyt_per_channel":
        g, b = np.array(p["gamma"]), np.array(p["beta"])
        T = np.tanh(p["alpha"] * x)
        return g * T + b, g * p["alpha"] * (1 - T * T)
    if name in ("dyisru", "dyisru_free", "dyisru_theory"):
        C_, s = p["C"], p["scale"]
        return isru(x, C_, s), s * C_ / (x * x + C_) ** 1.5
    if name == "derf":
        a, sh, g, b = p["alpha"], p["shift"], p["gamma"], p["beta"]
        from scipy.special import erf
        z = a * x + sh
        return g * erf(z) + b, g * a * 2 / math.sqrt(math.pi) * np.exp(-z * z)
    raise KeyError(name)


def jacobian_sums(y, s, norm):
    """Per token: ||J_t||_F^2 and J_ii, from the dense Jacobian."""
    N, d = y.shape
    frob = np.empty(N)
    jd = np.empty((N, d))
    eye = np.eye(d)
    for t in range(N):
        P = np.outer(y[t], y[t]) / d
        if norm == "layernorm":
            P = P + 1.0 / d
        J = (eye - P) / s[t]
        frob[t] = np.sum(J * J)
        jd[t] = np.diag(J)
    return frob, jd


# ------------------------------------------------------------- block sums

def reference(L, x, norm, eps, token_block):
    """Replicate-by-replicate values of every bootstrapped number, as
    normcmp defines them, from NumPy's own block sums."""
    N, d = x.shape
    y, s = (layernorm if norm == "layernorm" else rmsnorm)(x, eps)
    B = L["bootstrap"]["replicates"]
    seqs = -(-N // token_block)
    group = -(-seqs // 1024) if seqs > 1024 else 1
    nb = -(-seqs // group)
    C.ok(L["bootstrap"]["blocks"] == nb, f"{L['name']}: {nb} blocks")
    C.ok(L["bootstrap"]["tokens_per_block"] == token_block * group, f"{L['name']}: block size")
    blk = np.arange(N) // (token_block * group)
    fits = L["fits"]
    names = [k for k in fits if fits[k].get("rmse") is not None]
    ym = y.mean()
    frob, jd = jacobian_sums(y, s, norm)
    off = frob - np.sum(jd * jd, axis=1)
    cols = {"n": np.full(N, float(d)), "sst": np.sum((y - ym) ** 2, axis=1),
            "sdev": np.sum(y - ym, axis=1), "frob": frob,
            "scale": s, "tok": np.ones(N)}
    gm = L["input_stats"]["mean"]
    tm, tv = x.mean(axis=1), x.var(axis=1)
    cols["xn"], cols["x1"], cols["x2"] = np.full(N, float(d)), d * (tm - gm), d * (tv + (tm - gm) ** 2)
    for k in names:
        f, fp = fit_f(k, fits[k], x)
        cols["sse_" + k] = np.sum((y - f) ** 2, axis=1)
        cols["num_" + k] = np.sum((fp - jd) ** 2, axis=1) + off
    dy = fits["dyt"]
    a, g, b = dy["alpha"], dy["gamma"], dy["beta"]
    T = np.tanh(a * x)
    r = y - (g * T + b)
    Jd = [g * x * (1 - T * T), T, np.ones_like(x)]
    for i in range(3):
        cols[f"gd{i}"] = np.sum(r * Jd[i], axis=1)
    free = [0, 2] if dy["amplitude"]["rule"] != "free" else [0, 1, 2]
    H = np.array([[np.sum(Jd[i] * Jd[j]) for j in free] for i in free])
    lin = fits["linear"]
    rl = y - (lin["slope"] * x + lin["intercept"])
    cols["gl0"], cols["gl1"] = np.sum(rl * x, axis=1), np.sum(rl, axis=1)
    Hl = np.array([[np.sum(x * x), np.sum(x)], [np.sum(x), float(N * d)]])
    keys = list(cols)
    S = np.zeros((nb, len(keys)))
    for j, k in enumerate(keys):
        np.add.at(S[:, j], blk, cols[k])
    Rm = counts(L["bootstrap"]["seed"], nb, B).astype(float) @ S
    R = {k: Rm[:, j] for j, k in enumerate(keys)}
    tot = {k: S[:, j].sum() for j, k in enumerate(keys)}
    out = {}
    sst = R["sst"] - R["sdev"] ** 2 / R["n"]
    for k in names:
        out["r2." + k] = 1 - R["sse_" + k] / sst
        out["bp." + k] = np.sqrt(R["num_" + k] / R["frob"])
    ranked = [k for k in RANKED if k in names]
    best = max(ranked, key=lambda k: fits[k]["r2"])
    bpv = {k: math.sqrt(tot["num_" + k] / tot["frob"]) for k in ranked}
    bbest = min(ranked, key=bpv.get)
    for k in ranked:
        if k != best:
            out["gap." + k] = out["r2." + best] - out["r2." + k]
        if k != bbest:
            out["bpgap." + k] = out["bp." + k] - out["bp." + bbest]
    out["removed"] = 1 - R["sse_" + best] / R["sse_linear"]
    out["rho"] = R["scale"] / R["tok"]
    mx = R["x1"] / R["xn"]
    out["std"] = np.sqrt(R["x2"] / R["xn"] - mx * mx)
    gfull = np.array([tot[f"gd{i}"] for i in free])
    dg = np.stack([R[f"gd{i}"] for i in free], axis=1) - gfull
    dt = np.linalg.solve(H, dg.T).T
    theta = np.array([a, g, b])
    P = np.tile(theta, (B, 1))
    P[:, free] += dt
    out["alpha"], out["gamma"] = P[:, 0], P[:, 1]
    out["alpha_gamma"] = P[:, 0] * P[:, 1]
    out["slope_ratio"] = out["alpha_gamma"] * out["rho"]
    dl = np.linalg.solve(Hl, (np.stack([R["gl0"], R["gl1"]], axis=1)
                              - np.array([tot["gl0"], tot["gl1"]])).T).T
    out["affine_slope"] = lin["slope"] + dl[:, 0]
    return out, best, bbest


def summary(v):
    return np.std(v, ddof=1), np.quantile(v, 0.025), np.quantile(v, 0.975)


def compare(L, ref, best, bbest, tol=1e-8):
    Bo, name = L["bootstrap"], L["name"]
    C.ok(Bo["status"] == "ok", f"{name}: bootstrap ran ({Bo['status']})")

    def same(v, got, what):
        se, lo, hi = summary(v)
        C.rel(se, got["se"], tol, f"{name} {what}: se")
        C.rel(lo, got["ci95"][0], tol, f"{name} {what}: ci95 low")
        C.rel(hi, got["ci95"][1], tol, f"{name} {what}: ci95 high")

    for k, got in Bo["r2"].items():
        same(ref["r2." + k], got, f"R^2 {k}")
    C.ok(Bo["best_r2"]["fit"] == best, f"{name}: best by R^2 {best}")
    for k, got in Bo["best_r2"]["gaps"].items():
        same(ref["gap." + k], got, f"R^2 gap to {k}")
    C.ok(Bo["best_backprop"]["fit"] == bbest, f"{name}: best backprop {bbest}")
    for k, got in Bo["best_backprop"]["gaps"].items():
        same(ref["bpgap." + k], got, f"backprop gap to {k}")
    for k, got in Bo["backprop"].items():
        same(ref["bp." + k], got, f"backprop {k}")
    for k in ("removed", "alpha", "gamma", "alpha_gamma", "slope_ratio", "affine_slope", "rho",
              "std"):
        key = "residual_removed" if k == "removed" else k
        if np.ptp(ref[k]) == 0:
            C.ok(Bo[key]["se"] == 0 and Bo[key]["ci95"] == [ref[k][0]] * 2,
                 f"{name} {k}: fixed, se 0")
            continue
        same(ref[k], Bo[key], k)
    rr = Bo["run_replicates"]
    n = rr["n"]
    for k, v in (("log_inv_std", -np.log(ref["std"])), ("log_alpha", np.log(ref["alpha"])),
                 ("log_alpha_gamma", np.log(ref["alpha_gamma"])),
                 ("log_affine_slope", np.log(ref["affine_slope"]))):
        got = np.array(rr[k])
        C.ok(len(got) == n == min(200, len(v)), f"{name} {k}: {n} run replicates")
        C.ok(np.all(np.abs(got - v[:n]) <= 6e-7 * np.abs(v[:n]) + 1e-300),
             f"{name} {k}: run replicates to 7 digits (worst {np.max(np.abs(got - v[:n])):.2g})")


def fit_layer(tmp, path, *extra):
    out = os.path.join(tmp, "o")
    run("fit", path, "--out", out, "--quiet", *extra)
    return json.load(open(os.path.join(out, "report.json")))


def exact_replicates(tmp):
    # vit4mnist ln00 by images (17 tokens each: 120 blocks), ln11 token by token
    for prefix, extra, tb in (("ln00", ["--token-block", "17"], 17), ("ln11", [], 1)):
        path = os.path.join(DATA, prefix + "_input.npy")
        rep = fit_layer(tmp, path, "--bootstrap", "400", *extra)
        L = rep["layers"][0]
        C.ok(L["bootstrap"]["token_block"] == tb and L["bootstrap"]["token_block_source"] ==
             ("flag" if extra else "default"), f"{prefix}: token block {tb}")
        x = np.load(path).astype(np.float64)
        ref, best, bbest = reference(L, x, "layernorm", 1e-5, tb)
        compare(L, ref, best, bbest)
    # RMSNorm, DyT's amplitude fixed: gamma is not refitted
    path = os.path.join(tmp, "rms.npy")
    run("synth", "-o", path, "--preset", "late", "--tokens", "600", "--dim", "40", "--seed", "4")
    rep = fit_layer(tmp, path, "--norm", "rmsnorm", "--amplitude-dyt", "sqrt(d)", "--bootstrap",
                    "300", "--seed", "9")
    L = rep["layers"][0]
    C.ok(L["bootstrap"]["seed"] == 9, "the run's seed seeds the bootstrap")
    x = np.load(path).astype(np.float64)
    ref, best, bbest = reference(L, x, "rmsnorm", 1e-6, 1)
    compare(L, ref, best, bbest)
    C.ok(L["bootstrap"]["gamma"]["se"] == 0, "a fixed amplitude does not vary")


def linearised_vs_refit(tmp):
    """alpha's and the affine slope's bootstrap standard errors: one
    Gauss-Newton step (normcmp) against a full least-squares refit of
    every replicate (SciPy), on the same draws."""
    path = os.path.join(tmp, "small.npy")
    run("synth", "-o", path, "--preset", "late", "--tokens", "300", "--dim", "24", "--seed", "2")
    B = 120
    rep = fit_layer(tmp, path, "--bootstrap", str(B), "--no-jacobian")
    L = rep["layers"][0]
    x = np.load(path).astype(np.float64)
    y, _ = layernorm(x, 1e-5)
    N = len(x)
    c = counts(L["bootstrap"]["seed"], N, B)
    dy = L["fits"]["dyt"]
    p0 = np.array([dy["alpha"], dy["gamma"], dy["beta"]])
    al, sl = [], []
    for r in range(B):
        w = np.sqrt(np.repeat(c[r], x.shape[1]).astype(float))
        xs, ys = x.ravel(), y.ravel()
        res = optimize.least_squares(lambda p: w * (p[1] * np.tanh(p[0] * xs) + p[2] - ys), p0,
                                     xtol=1e-12, ftol=1e-12)
        al.append(res.x[0])
        A = np.stack([xs * w, w], axis=1)
        sl.append(np.linalg.lstsq(A, ys * w, rcond=None)[0][0])
    for key, v in (("alpha", al), ("affine_slope", sl)):
        se = np.std(v, ddof=1)
        got = L["bootstrap"][key]["se"]
        print(f"{key}: one-step se {got:.4g}, refitted {se:.4g}")
        C.ok(abs(got / se - 1) < 0.15, f"{key}: one-step se {got:.4g} vs refitted {se:.4g}")


def synth_run(tmp, name, layers):
    p = os.path.join(tmp, name + ".json")
    json.dump({"name": name, "layers": layers, "jacobian": {"enabled": False}}, open(p, "w"))
    out = run("run", p, "--out", os.path.join(tmp, name), "--quiet", "--verbose").stdout
    return json.load(open(os.path.join(tmp, name, "report.json"))), out


def decisions(tmp):
    """Labels and winners decided by their intervals, on synthetic layers
    whose residual removed sits on either side of the old fixed cut."""
    mags = {"below": 0.15, "at_cut_low": 0.25, "at_cut_high": 0.3, "above": 0.5}
    layers = [{"synth": {"preset": "middle", "tokens": 240, "dim": 32, "seed": 5,
                         "outlier_mag": m}, "label": k} for k, m in mags.items()]
    rep, out = synth_run(tmp, "cut", layers)
    want = {"below": "near-linear", "at_cut_low": "undecided", "at_cut_high": "undecided",
            "above": "saturating"}
    old = {}
    for L, v in zip(rep["layers"], rep["run"]["per_layer"]):
        rm = L["bootstrap"]["residual_removed"]
        lo, hi = rm["ci95"]
        name = L["name"]
        old[name] = "saturating" if rm["value"] >= 0.1 else "near-linear"
        C.ok(v["kind"] == want[name], f"{name}: {want[name]}, got {v['kind']} "
             f"({rm['value']:.3f} [{lo:.3f}, {hi:.3f}])")
        line = [s for s in out.splitlines() if s.strip().startswith(name + " ") and "removes" in s]
        C.ok(len(line) == 1 and want[name] in line[0] and f"{100 * rm['value']:.0f}%" in line[0],
             f"{name}: the verdict line says {want[name]} with its value: {line}")
    C.ok(old["at_cut_low"] != old["at_cut_high"],
         "the two layers at the cut got different labels from the old fixed cut")
    R = rep["run"]
    C.ok((R["saturating_layers"], R["near_linear_layers"], R["undecided_layers"]) == (1, 1, 2),
         "the run counts decided layers only and says how many are undecided")
    C.ok("1 of 4 layers saturating, 1 near-linear, 2 undecided" in R["verdict"], R["verdict"])
    # winners: on these small layers the fits' R^2 differ by more than the
    # old fixed 1e-4 tie but less than the tokens decide
    ties = 0
    for L, v in zip(rep["layers"], rep["run"]["per_layer"]):
        for k, g in L["bootstrap"]["best_r2"]["gaps"].items():
            inside = g["ci95"][0] <= 0
            C.ok((k in v["best_r2"]["ties"]) == inside, f"{L['name']}: {k} tied iff its gap's "
                 f"interval reaches 0 ({g['value']:.2g} [{g['ci95'][0]:.2g}, {g['ci95'][1]:.2g}])")
            ties += inside and g["value"] > 1e-4
    C.ok(ties > 0, f"{ties} winners by more than 1e-4 that the tokens do not support: ties now")
    C.ok("tie: " in out, "the verdict names the ties")


def groups(tmp):
    """Two models of the same d are two groups: by folder, and by norm kind."""
    for sub in ("a", "b"):
        os.makedirs(os.path.join(tmp, sub), exist_ok=True)
        for k in ("00", "05", "11"):
            for c in ("input", "output", "weight", "bias"):
                src = os.path.join(DATA, f"ln{k}_{c}.npy")
                dst = os.path.join(tmp, sub, f"{sub}{k}_{c}.npy")
                if not os.path.exists(dst):
                    os.symlink(src, dst)
    files = [os.path.join(tmp, s, f"{s}{k}_input.npy") for s in "ab" for k in ("00", "05", "11")]
    out = os.path.join(tmp, "two")
    run("fit", *files, "--out", out, "--quiet", "--no-jacobian", "--bootstrap", "50")
    R = json.load(open(os.path.join(out, "report.json")))["run"]
    C.ok([g["names"] for g in R["groups"]] == [["a00", "a05", "a11"], ["b00", "b05", "b11"]],
         f"two folders of d = 64: two groups {[g['names'] for g in R['groups']]}")
    p = os.path.join(tmp, "kinds.json")
    lay = [{"file": os.path.join(DATA, f"ln{k}_input.npy"), "label": f"{n}{k}", "norm": n}
           for n in ("layernorm", "rmsnorm") for k in ("00", "05", "11")]
    json.dump({"name": "kinds", "layers": lay, "jacobian": {"enabled": False},
               "bootstrap": 50}, open(p, "w"))
    run("run", p, "--out", os.path.join(tmp, "kinds"), "--quiet")
    R = json.load(open(os.path.join(tmp, "kinds", "report.json")))["run"]
    C.ok([(g["norm"], g["layers"]) for g in R["groups"]] == [("layernorm", 3), ("rmsnorm", 3)],
         "one folder analysed as both norm kinds: two groups, never one slope")
    lay = [dict(l, group="all") for l in lay]
    json.dump({"name": "named", "layers": lay, "jacobian": {"enabled": False},
               "bootstrap": 50}, open(p, "w"))
    run("run", p, "--out", os.path.join(tmp, "named"), "--quiet")
    R = json.load(open(os.path.join(tmp, "named", "report.json")))["run"]
    C.ok(len(R["groups"]) == 1 and R["groups"][0]["name"] == "all",
         "a config may name the group explicitly")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        exact_replicates(tmp)
        linearised_vs_refit(tmp)
        decisions(tmp)
        groups(tmp)
    C.done()


if __name__ == "__main__":
    main()
