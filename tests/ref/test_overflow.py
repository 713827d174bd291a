"""Finite float64 inputs near the ends of the range (issue 13, item 7):
tokens of magnitude 1e300 (whose squares overflow) and 1e-300 (whose
squares underflow) are not non-finite tokens. normcmp scales each token by
a power of two before its statistics (core/norm.c); the norm's output is
checked against NumPy computed on the same data rescaled by hand (exact
powers of two, so NumPy's squares stay finite), and fit's report must count
no non-finite token and fit every layer.
"""
import os
import tempfile

import numpy as np

from common import Checker, fit_report, layernorm, rmsnorm, run

C = Checker("test_overflow.py")
rng = np.random.default_rng(13)

with tempfile.TemporaryDirectory() as d:
    for mag, k in ((1e300, 996), (1e-300, -997)):
        for kind, ref in (("layernorm", layernorm), ("rmsnorm", rmsnorm)):
            x = rng.standard_normal((48, 24)) * mag
            x[0] += 3 * mag  # an offset token
            src = os.path.join(d, "x.npy")
            np.save(src, x)
            out = os.path.join(d, "y.npy")
            run("norm", src, "--norm", kind, "--eps", "0", "-o", out)
            y = np.load(out)
            want, _ = ref(np.ldexp(x, -k), 0.0)  # exact rescaling: same output
            C.ok(np.all(np.isfinite(y)), f"{mag:g} {kind}: every output finite")
            err = np.max(np.abs(y - want))
            C.ok(err < 1e-6, f"{mag:g} {kind}: output vs NumPy on the rescaled data, "
                 f"max abs diff {err:.3g} (float32 output)")
            rep = fit_report(src, "--norm", kind, "--eps", "0", "--no-jacobian")
            layer = rep["layers"][0]
            st = layer["input_stats"]
            C.ok(st["nonfinite_tokens"] == 0, f"{mag:g} {kind}: no non-finite token "
                 f"(found {st['nonfinite_tokens']})")
            C.ok(st["tokens_used"] == 48, f"{mag:g} {kind}: all 48 tokens used")
            # the pooled moments over all N*d values are beyond the double
            # range: no number for them and no fit, but a status saying so
            # (a wrong R^2 from overflowed sums would be worse than none)
            C.ok(st["std"] is None and st["rms"] is None,
                 f"{mag:g} {kind}: pooled std/rms undefined (got {st['std']}, {st['rms']})")
            want_st = "overflow" if mag > 1 else "underflow"
            C.ok(st.get("status", "").startswith(want_st),
                 f"{mag:g} {kind}: input_stats.status says {want_st} (got {st.get('status')!r})")
            lin = layer["fits"]["linear"]
            C.ok(lin.get("r2") is None and "beyond the range" in lin.get("status", ""),
                 f"{mag:g} {kind}: the affine fit is not reported, with a status "
                 f"(got {lin.get('r2')}, {lin.get('status')!r})")
            ts = st["token_scale"]
            C.ok(ts["mean"] is not None and 0.1 * mag < ts["mean"] < 10 * mag,
                 f"{mag:g} {kind}: the mean token scale is finite and exact ({ts['mean']})")

    # tiny tokens with eps > 0: eps dominates, every token's scale is
    # sqrt(var + eps) ~ sqrt(eps), finite (it was +inf before)
    x = rng.standard_normal((48, 24)) * 1e-300
    src = os.path.join(d, "tiny.npy")
    np.save(src, x)
    for kind in ("layernorm", "rmsnorm"):
        rep = fit_report(src, "--norm", kind, "--eps", "1e-5", "--no-jacobian")
        ts = rep["layers"][0]["input_stats"]["token_scale"]
        want = np.sqrt(1e-5)
        C.ok(ts["mean"] is not None and abs(ts["mean"] - want) < 1e-12 * want,
             f"1e-300 {kind} eps 1e-5: token scale sqrt(eps) = {want:.6g} (got {ts['mean']})")

C.done()
