"""The value tables of 16-bit inputs (src/analysis/codetab.h) against direct
evaluation, and the sharded and threaded paths against each other.

An F16 or BF16 layer with at least 2^19 points has its fits' f and f' and
each per-channel pass's tanh(alpha x) looked up by code instead of
evaluated. Every half value is exactly a float32, so the same layer saved
as float32 (widened with NumPy, bit manipulation only) is evaluated
directly, point by point. The two reports must agree in every number but
those that describe the file itself (dtype, size, hash, the real-output
tolerance): the tables are filled by the same functions at the same
doubles. Also below the table threshold (direct both ways), for RMSNorm,
with a token sample, without the Jacobian, and with one thread against the
default. Then the recomputed fits of a table-path layer against NumPy, so
that "identical to the direct path" is not "identical and both wrong".
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import NC, Checker, layernorm  # noqa: E402

C = Checker("test_codetab")

# numbers that describe the input file rather than the analysis, and timings
SKIP = {"name", "sha256", "bytes", "dtype", "path", "output", "tolerance", "command", "config",
        "timing", "time_s", "inputs", "tool", "outputs", "source"}


def walk(a, b, path, out):
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k in SKIP or k.endswith("_s"):
                continue
            if k not in a or k not in b:
                out.append(f"{path}/{k}: missing on one side")
                continue
            walk(a[k], b[k], f"{path}/{k}", out)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: lengths {len(a)} and {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} and {b!r}")


def report(path, d, *extra):
    out = os.path.join(d, "out_" + os.path.basename(path) + "_" + "_".join(extra).replace("-", ""))
    p = subprocess.run([NC, "fit", path, "--out", out, "--quiet", *extra], capture_output=True,
                       text=True)
    C.ok(p.returncode == 0, f"fit {path} {' '.join(extra)}: status {p.returncode}: {p.stderr}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def widen(path16, path32, bf16):
    """The half file's values as float32, exactly (bits, no rounding)."""
    with open(path16, "rb") as f:
        raw = f.read()
    hlen = int.from_bytes(raw[8:10], "little")
    shape = eval(raw[10:10 + hlen].decode("latin1").split("'shape':")[1].split(")")[0] + ")")
    h = np.frombuffer(raw[10 + hlen:], dtype="<u2").reshape(shape)
    if bf16:
        x = (h.astype(np.uint32) << 16).view(np.float32)
    else:
        x = h.view(np.float16).astype(np.float32)
    np.save(path32, x)
    return x


def same(a, b, what):
    diffs = []
    walk(a, b, "", diffs)
    C.ok(not diffs, f"{what}: {len(diffs)} numbers differ, first: {diffs[:3]}")


def main():
    with tempfile.TemporaryDirectory() as d:
        cases = [("bf16", 1024, 512, "late", 11), ("f16", 1100, 480, "middle", 12),
                 ("bf16", 300, 96, "early", 13)]  # the last is below the tables' threshold
        for dt, n, dim, preset, seed in cases:
            p16 = os.path.join(d, f"x_{dt}_{n}.npy")
            p32 = os.path.join(d, f"x_{dt}_{n}_f32.npy")
            subprocess.run([NC, "synth", "-o", p16, "--preset", preset, "--tokens", str(n),
                            "--dim", str(dim), "--seed", str(seed), "--dtype", dt], check=True,
                           capture_output=True)
            x = widen(p16, p32, dt == "bf16")
            label = f"{dt} {n}x{dim}"
            for extra in [(), ("--norm", "rmsnorm"), ("--sample-tokens", "700"),
                          ("--no-jacobian",), ("--threads", "1")]:
                if n * dim < 1 << 19 and extra:
                    continue
                a, b = report(p16, d, *extra), report(p32, d, *extra)
                same(a["layers"], b["layers"], f"{label} {' '.join(extra)}: tables vs direct")
                C.ok(a["inputs"][0]["dtype"] == dt.upper() and b["inputs"][0]["dtype"] == "F32",
                     f"{label}: the two inputs are {dt} and float32")
            # the table path against NumPy: exact metrics at the reported parameters
            if dt != "bf16" or n * dim < 1 << 19:
                continue
            r = report(p16, d)["layers"][0]
            xs = x.astype(np.float64)
            y, _ = layernorm(xs, 1e-5)
            f = r["fits"]
            a_, g_, b_ = f["dyt"]["alpha"], f["dyt"]["gamma"], f["dyt"]["beta"]
            e = g_ * np.tanh(a_ * xs) + b_ - y
            C.rel((e * e).sum(), f["dyt"]["sse"], 1e-10, f"{label} dyt sse (NumPy)")
            C.rel(np.abs(e).max(), f["dyt"]["max_abs_err"], 1e-10, f"{label} dyt max (NumPy)")
            C.rel(np.abs(e).mean(), f["dyt"]["mean_abs_err"], 1e-10, f"{label} dyt mean (NumPy)")
            c_, s_ = f["dyisru_free"]["C"], f["dyisru_free"]["scale"]
            e = s_ * xs / np.sqrt(xs * xs + c_) - y
            C.rel((e * e).sum(), f["dyisru_free"]["sse"], 1e-10, f"{label} dyisru_free sse")
            pc = f["dyt_per_channel"]
            e = np.array(pc["gamma"]) * np.tanh(pc["alpha"] * xs) + np.array(pc["beta"]) - y
            C.rel((e * e).sum(), pc["sse"], 1e-10, f"{label} dyt_per_channel sse (NumPy)")
            C.rel(np.abs(e).max(), pc["max_abs_err"], 1e-10, f"{label} dyt_per_channel max")
            # the per-channel fit is stationary: S'(alpha) ~ 0 at the reported alpha
            def sse_at(al):
                T = np.tanh(al * xs)
                mt, my = T.mean(0), y.mean(0)
                g = ((T - mt) * (y - my)).sum(0) / ((T - mt) ** 2).sum(0)
                return ((y - my - g * (T - mt)) ** 2).sum()
            al, h = pc["alpha"], 1e-4
            s0, sp, sm = sse_at(al), sse_at(al * (1 + h)), sse_at(al * (1 - h))
            C.ok(s0 <= sp and s0 <= sm, f"{label} per-channel alpha is a minimum "
                 f"({sm!r}, {s0!r}, {sp!r})")
    C.done()


main()
