"""Hostile sizes and numeric edge cases (issue 6): every case runs without a
crash, and every number in the report is finite or an explicit null whose
object carries a "status" saying why (never a NaN or Infinity in the JSON).

Cases: zero tokens, zero channels, d = 1 (LayerNorm's output is identically
0; RMSNorm's is x/sqrt(x^2+eps)), constant tokens (eps decides: with eps > 0
the output is 0, with eps = 0 the token has no output and is counted), an
all-NaN layer, a single non-finite value, huge values (1e30), subnormal
values, float16 infinities, one to four tokens (per-channel DyT), a
safetensors header claiming gigabytes, a shape whose product overflows.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import NC, Checker  # noqa: E402

C = Checker("test_edge")


def reject_constant(name):
    raise ValueError(f"non-JSON number {name}")


def walk_nulls(node, path, C, what):
    """Every null must sit in an object that has a status."""
    if isinstance(node, dict):
        nulls = [k for k, v in node.items() if v is None]
        if nulls:
            C.ok("status" in node, f"{what}: null {path}.{nulls[0]} without a status")
        for k, v in node.items():
            walk_nulls(v, f"{path}.{k}", C, what)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if v is None:
                C.ok(False, f"{what}: null inside the list {path}[{i}]")
            else:
                walk_nulls(v, f"{path}[{i}]", C, what)


def fit(path, *extra, expect=0):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([NC, "fit", path, "--out", d, "--quiet", *extra],
                           capture_output=True, text=True)
        C.ok(p.returncode == expect,
             f"{os.path.basename(path)} {extra}: exit {p.returncode}, expected {expect}: {p.stderr}")
        if p.returncode != 0:
            C.ok(p.stderr.count("\n") == 1 and p.stderr.startswith("normcmp: "),
                 f"{os.path.basename(path)}: one line on stderr: {p.stderr!r}")
            return None
        text = open(os.path.join(d, "report.json")).read()
    try:
        rep = json.loads(text, parse_constant=reject_constant)
    except ValueError as e:
        C.ok(False, f"{os.path.basename(path)}: {e}")
        return None
    C.ok(True, "report is valid JSON")
    walk_nulls(rep, "", C, os.path.basename(path))
    return rep


def save(tmp, name, a):
    p = os.path.join(tmp, name)
    np.save(p, a)
    return p


def main():
    rng = np.random.default_rng(5)
    with tempfile.TemporaryDirectory() as tmp:
        # zero tokens, zero channels
        r = fit(save(tmp, "zero_tokens.npy", np.zeros((0, 16), np.float32)))
        if r:
            L = r["layers"][0]
            C.ok(L["tokens"] == 0 and L["fits"]["dyt"]["status"].startswith("no usable"),
                 "zero tokens: fits say why")
        r = fit(save(tmp, "zero_channels.npy", np.zeros((7, 0), np.float32)))
        if r:
            C.ok(r["layers"][0]["dim"] == 0, "zero channels")
        # d = 1
        x1 = rng.standard_normal((300, 1)).astype(np.float32)
        r = fit(save(tmp, "d1.npy", x1))
        if r:
            f = r["layers"][0]["fits"]
            C.ok(f["linear"]["rmse"] == 0 and f["linear"]["r2"] is None,
                 "d = 1 LayerNorm: output 0, R^2 undefined (null with status)")
        r = fit(os.path.join(tmp, "d1.npy"), "--norm", "rmsnorm")
        if r:
            C.ok(r["layers"][0]["fits"]["dyt"]["r2"] is not None, "d = 1 RMSNorm fits")
        # constant tokens: eps decides
        xc = np.tile(np.float32(2.5), (50, 8))
        xc[0::2] = rng.standard_normal((25, 8))
        p = save(tmp, "const.npy", xc.astype(np.float32))
        r = fit(p)
        if r:
            st = r["layers"][0]["input_stats"]
            C.ok(st["zero_scale_tokens"] == 0 and st["tokens_used"] == 50,
                 "constant tokens with eps > 0 are used (output 0)")
        r = fit(p, "--eps", "0")
        if r:
            st = r["layers"][0]["input_stats"]
            C.ok(st["zero_scale_tokens"] == 25 and st["tokens_used"] == 25,
                 "constant tokens with eps = 0 are counted and left out")
        # all NaN, and a single non-finite value
        r = fit(save(tmp, "nan.npy", np.full((20, 8), np.nan, np.float32)))
        if r:
            st = r["layers"][0]["input_stats"]
            C.ok(st["nonfinite_tokens"] == 20 and st["mean"] is None and "status" in st,
                 "all-NaN layer: counted, statistics null with a status")
        xs = rng.standard_normal((40, 16)).astype(np.float32)
        xs[3, 5] = np.inf
        r = fit(save(tmp, "one_inf.npy", xs))
        if r:
            st = r["layers"][0]["input_stats"]
            C.ok(st["nonfinite_tokens"] == 1 and st["nonfinite_values"] == 1 and
                 st["tokens_used"] == 39, "a single infinity: its token counted and left out")
            C.ok(r["layers"][0]["fits"]["dyt"]["r2"] is not None, "the fits use the rest")
        # huge values and subnormals
        xh = rng.standard_normal((64, 32)).astype(np.float32)
        xh[7, 3] = 1e30
        xh[9, :] *= np.float32(1e-42)   # subnormal float32 values
        r = fit(save(tmp, "huge.npy", xh))
        if r:
            f = r["layers"][0]["fits"]
            C.ok(all(f[k]["rmse"] is not None for k in f), "huge and subnormal values: finite fits")
        # float16 infinities
        x16 = rng.standard_normal((30, 12)).astype(np.float16)
        x16[2, 2] = np.float16(np.inf)
        x16[4, 1] = np.float16(-np.inf)
        r = fit(save(tmp, "f16inf.npy", x16))
        if r:
            C.ok(r["layers"][0]["input_stats"]["nonfinite_tokens"] == 2, "float16 infinities")
        # few tokens: per-channel DyT needs 3 (with 2, every alpha fits every
        # channel exactly: not fitted, and says so); from 3 on, its objective
        # is the SSE at the parameters it reports, converged or not
        for n, d in [(1, 9), (2, 63), (2, 7), (3, 63), (3, 9), (3, 513), (4, 1100)]:
            xf = (rng.standard_normal((n, d)) * 2 + 0.3).astype(np.float32)
            r = fit(save(tmp, f"few_{n}x{d}.npy", xf), "--fits", "dyt,dyt_per_channel")
            if not r:
                continue
            pc = r["layers"][0]["fits"]["dyt_per_channel"]
            if n < 3:
                C.ok("alpha" not in pc and pc["status"].startswith("not fitted: ")
                     and "need 3 or more" in pc["status"], f"{n} x {d}: per-channel not fitted")
            else:
                C.ok(pc["status"] in ("ok", "Halley passes reached the limit before the "
                                      "tolerance"), f"{n} x {d}: per-channel status")
                C.rel(pc["sse"], pc["objective"], 1e-9, f"{n} x {d}: per-channel objective = SSE")
        # beyond |x| ~ 5.6e102 the per-channel fit's third-derivative sums
        # overflow (x^3): it falls back to Newton's steps and stays
        # scale-equivariant (alpha(c x) = alpha(x) / c with eps = 0), its
        # objective finite
        xe = rng.standard_normal((512, 256))
        xe[:, 5] *= 20
        base = fit(save(tmp, "scale0.npy", xe), "--norm", "rmsnorm", "--eps", "0")
        for e in (102, 110):
            r = fit(save(tmp, f"scale{e}.npy", xe * 10.0 ** e), "--norm", "rmsnorm", "--eps", "0")
            if not (r and base):
                continue
            pc, p0 = r["layers"][0]["fits"]["dyt_per_channel"], base["layers"][0]["fits"]["dyt_per_channel"]
            C.ok(pc["converged"] and pc["objective"] is not None, f"x 1e{e}: per-channel converged, objective finite")
            C.rel(p0["alpha"], pc["alpha"] * 10.0 ** e, 1e-9, f"x 1e{e}: per-channel alpha scales")
            C.rel(pc["sse"], pc["objective"] or 0.0, 1e-9, f"x 1e{e}: per-channel objective = SSE")
        # a safetensors header claiming gigabytes, and an overflowing shape
        p = os.path.join(tmp, "giga.safetensors")
        with open(p, "wb") as fh:
            fh.write(struct.pack("<Q", 3 << 30) + b"{}")
        fit(p, expect=2)
        hdr = json.dumps({"a.input": {"dtype": "F32", "shape": [2**40, 2**40],
                                      "data_offsets": [0, 0]}}).encode()
        p = os.path.join(tmp, "overflow.safetensors")
        with open(p, "wb") as fh:
            fh.write(struct.pack("<Q", len(hdr)) + hdr)
        fit(p, expect=2)
    C.done()


if __name__ == "__main__":
    main()
