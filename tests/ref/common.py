"""Shared helpers for the NumPy/SciPy cross-checks in tests/ref/.

Each test runs the real binary, reads its report.json and recomputes the
same quantities independently with NumPy (float64) and SciPy, comparing
with a tolerance stated per quantity. Counts go to a Checker that prints
"<name>: N passed, N failed" at the end, the line tests/run.sh adds up.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
NC = os.path.join(TOP, BUILD, "normcmp")


class Checker:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def ok(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}", file=sys.stderr)

    def rel(self, want, got, tol, what):
        want = float(want)
        got = float("nan") if got is None else float(got)
        scale = max(abs(want), 1e-300)
        off = abs(got - want) / scale
        self.ok(off <= tol, f"{what}: expected {want!r}, got {got!r} (rel off {off:.3g} > {tol:g})")

    def abs(self, want, got, tol, what):
        want = float(want)
        got = float("nan") if got is None else float(got)
        off = abs(got - want)
        self.ok(off <= tol, f"{what}: expected {want!r}, got {got!r} (abs off {off:.3g} > {tol:g})")

    def done(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)

    def torch(self, threads=1):
        """PyTorch, single-threaded unless threads is None; its absence is a
        failure, since `make test` installs it (scripts/deps.sh test)."""
        try:
            import torch
        except ImportError:
            self.ok(False, "PyTorch is missing: run scripts/deps.sh test")
            self.done()
        if threads is not None:
            torch.set_num_threads(threads)
        return torch


def run(*args, check=True):
    """Runs normcmp with args; returns the CompletedProcess."""
    p = subprocess.run([NC, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"normcmp {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def fit_report(path, *extra):
    """Runs `normcmp fit path` into a temporary folder; returns the report."""
    with tempfile.TemporaryDirectory() as d:
        run("fit", path, "--out", d, "--quiet", *extra)
        with open(os.path.join(d, "report.json")) as f:
            return json.load(f)


def layernorm(x, eps):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps), np.sqrt(var[:, 0] + eps)


def rmsnorm(x, eps):
    r = np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    return x / r, r[:, 0]
