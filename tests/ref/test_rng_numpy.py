"""NumPy's legacy generator (core/rng_numpy.h) against NumPy itself, bit for
bit: raw MT19937 words, random_sample() and normal(loc, scale) (the polar
method with its cached partner) for many seeds and thousands of draws,
including the outlier-steps draw np.random.seed(1); np.random.normal(0, 2, 100).

The C side is the unit-test binary in dump mode (tests/unit/test_rng_numpy.c).
"""
import os
import subprocess

import numpy as np

from common import BUILD, TOP, Checker

C = Checker("test_rng_numpy.py")
BIN = os.path.join(TOP, BUILD, "tests", "test_rng_numpy")


def dump(kind, seed, n, *extra):
    out = subprocess.run([BIN, kind, str(seed), str(n), *map(str, extra)],
                         capture_output=True, text=True, check=True).stdout.split()
    if kind == "u32":
        return np.array([int(v) for v in out], dtype=np.uint64)
    return np.array([float.fromhex(v) for v in out])


def same_bits(want, got, what):
    ok = want.shape == got.shape and np.array_equal(want.view(np.uint64), got.view(np.uint64))
    if not ok and want.shape == got.shape:
        k = int(np.flatnonzero(want.view(np.uint64) != got.view(np.uint64))[0])
        what += f": first difference at draw {k}: NumPy {want[k]!r}, C {got[k]!r}"
    C.ok(ok, what)


for seed in (0, 1, 2, 7, 42, 12345, 2**31 - 1, 2**32 - 1):
    # legacy randint over the full 32-bit range returns one raw word per value
    r = np.random.RandomState(seed)
    want = r.randint(0, 2**32, size=2000, dtype=np.uint32).astype(np.uint64)
    C.ok(np.array_equal(want, dump("u32", seed, 2000)), f"seed {seed}: 2000 MT19937 words")

    r = np.random.RandomState(seed)
    same_bits(r.random_sample(3000), dump("double", seed, 3000), f"seed {seed}: random_sample")
    r = np.random.RandomState(seed)
    same_bits(r.normal(0, 2, 3001), dump("normal", seed, 3001, 0, 2), f"seed {seed}: normal(0, 2)")
    r = np.random.RandomState(seed)
    same_bits(r.normal(0.5, 3.25, 500), dump("normal", seed, 500, 0.5, 3.25),
              f"seed {seed}: normal(0.5, 3.25)")

# the outlier-steps draws: seeds 1..1000, 100 values each (what the spread uses)
bad = 0
for seed in range(1, 1001):
    r = np.random.RandomState(seed)
    want = r.normal(0, 2, 100)
    got = dump("normal", seed, 100, 0, 2)
    bad += not np.array_equal(want.view(np.uint64), got.view(np.uint64))
C.ok(bad == 0, f"seeds 1..1000, normal(0, 2, 100): {bad} seeds differ from NumPy")

# one long run: a million normals, beyond many refills of the 624 words
r = np.random.RandomState(3)
same_bits(r.normal(0, 1, 1_000_000), dump("normal", 3, 1_000_000, 0, 1), "seed 3: 1e6 normals")

C.done()
