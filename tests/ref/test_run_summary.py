"""Cross-check of the run-level block (docs/report.md, "The run-level
block"; src/analysis/run_summary.c) with NumPy/SciPy, from the per-layer
numbers of the same report.json:

  log-log slopes of alpha, alpha*gamma and the affine slope against 1/std:
  OLS slope and intercept (numpy.polyfit), Pearson r (numpy.corrcoef), the
  slope's standard error and the t-based 95% interval
  (scipy.stats.linregress, scipy.stats.t.ppf(0.975, n - 2));
  per layer: the best surrogate by R^2 (shared-parameter fits only) with
  ties below 1e-4, the gain over the affine map, the share of its residual
  removed, alpha / theory alpha; the best by backprop error.

Runs: five synthetic layers of different scales plus the three real
vit4mnist layers (eight layers), a two-layer run (slope but no interval)
and a one-layer run (no block)."""
import json
import math
import os
import sys
import tempfile

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker, run  # noqa: E402

C = Checker("test_run_summary")
tmp = tempfile.mkdtemp()
DATA = os.path.join(TOP, "data", "vit4mnist")
RANKED = ["dyt", "dyisru", "dyisru_free", "dyt_theory", "dyisru_theory", "derf"]


def config(path, layers):
    json.dump({"name": "rs", "layers": layers, "jacobian": {"probes": 2}}, open(path, "w"))


synth = [{"synth": {"preset": p, "tokens": 300, "dim": 48, "seed": k + 1, "scale_median": s},
          "label": f"{p}{k}"}
         for k, (p, s) in enumerate([("late", 0.3), ("middle", 1.0), ("late", 3.0),
                                     ("early", 0.7), ("late", 8.0)])]
real = [{"file": os.path.join(DATA, f"ln{k}_input.npy")} for k in ("00", "05", "11")]
config(os.path.join(tmp, "c8.json"), synth + real)
run("run", os.path.join(tmp, "c8.json"), "--out", os.path.join(tmp, "o8"), "--quiet")
rep = json.load(open(os.path.join(tmp, "o8", "report.json")))
L, R = rep["layers"], rep["run"]
C.ok(R["layers"] == len(L) == 8, "run.layers counts every layer")

inv_std = np.array([1.0 / l["input_stats"]["std"] for l in L])
ys = {
    "alpha": np.array([l["fits"]["dyt"]["alpha"] for l in L]),
    "alpha_gamma": np.array([l["fits"]["dyt"]["alpha"] * l["fits"]["dyt"]["gamma"] for l in L]),
    "affine_slope": np.array([l["fits"]["linear"]["slope"] for l in L]),
}
for key, y in ys.items():
    got = R["loglog_vs_inv_std"][key]
    ok = (y > 0) & np.isfinite(y)
    lx, ly = np.log(inv_std[ok]), np.log(y[ok])
    n = len(lx)
    C.ok(got["layers"] == n, f"{key}: layers used")
    slope, icpt = np.polyfit(lx, ly, 1)
    lr = stats.linregress(lx, ly)
    t = stats.t.ppf(0.975, n - 2)
    C.rel(slope, got["slope"], 1e-9, f"{key}: slope")
    C.abs(icpt, got["intercept"], 1e-9 * max(1, abs(icpt)), f"{key}: intercept")
    C.rel(np.corrcoef(lx, ly)[0, 1], got["r"], 1e-9, f"{key}: r")
    C.rel(lr.stderr, got["slope_se"], 1e-7, f"{key}: slope_se")
    C.abs(slope - t * lr.stderr, got["ci95"][0], 1e-9 * (1 + t * lr.stderr), f"{key}: ci95 low")
    C.abs(slope + t * lr.stderr, got["ci95"][1], 1e-9 * (1 + t * lr.stderr), f"{key}: ci95 high")
    C.ok(got["status"] == "ok", f"{key}: status ok")

for l, v in zip(L, R["per_layer"]):
    name = l["name"]
    C.ok(v["name"] == name, f"{name}: order")
    r2 = {f: l["fits"][f]["r2"] for f in RANKED if l["fits"].get(f, {}).get("r2") is not None}
    best = max(r2, key=r2.get)
    C.ok(v["best_r2"]["fit"] == best, f"{name}: best R^2 {best}, got {v['best_r2']['fit']}")
    ties = sorted(f for f in r2 if f != best and abs(r2[f] - r2[best]) < 1e-4)
    C.ok(sorted(v["best_r2"]["ties"]) == ties, f"{name}: R^2 ties {ties}, got {v['best_r2']['ties']}")
    aff = l["fits"]["linear"]["r2"]
    C.rel(r2[best] - aff, v["gain_r2"], 1e-9, f"{name}: gain_r2")
    C.rel(1 - (1 - r2[best]) / (1 - aff), v["residual_removed"], 1e-9, f"{name}: residual_removed")
    C.rel(l["fits"]["dyt"]["alpha"] / l["fits"]["dyt"]["theory_alpha"], v["alpha_over_theory"],
          1e-12, f"{name}: alpha_over_theory")
    rr = v["residual_removed"]
    kind = "strongly saturating" if rr >= 0.5 else "saturating" if rr >= 0.1 else "near-linear"
    C.ok(v["kind"] == kind, f"{name}: kind {kind}, got {v['kind']}")
    sur = l["jacobian"]["surrogates"]
    bp = {f: sur[f]["backprop_rel_err"] for f in RANKED
          if f in sur and sur[f].get("backprop_rel_err") is not None}
    bbest = min(bp, key=bp.get)
    C.ok(v["best_backprop"]["fit"] == bbest, f"{name}: best backprop {bbest}, got "
         f"{v['best_backprop']['fit']}")

# two layers: a slope, r = +-1, no interval; one layer: no block
config(os.path.join(tmp, "c2.json"), real[:2])
run("run", os.path.join(tmp, "c2.json"), "--out", os.path.join(tmp, "o2"), "--quiet")
rep2 = json.load(open(os.path.join(tmp, "o2", "report.json")))
g = rep2["run"]["loglog_vs_inv_std"]["affine_slope"]
lx = np.log([1 / l["input_stats"]["std"] for l in rep2["layers"]])
ly = np.log([l["fits"]["linear"]["slope"] for l in rep2["layers"]])
C.rel((ly[1] - ly[0]) / (lx[1] - lx[0]), g["slope"], 1e-9, "two layers: slope")
C.ok(g["ci95"] == [None, None] and g["slope_se"] is None, "two layers: no interval")
C.ok("needs 3" in g["status"], f"two layers: status says why ({g['status']})")
config(os.path.join(tmp, "c1.json"), real[:1])
p = run("run", os.path.join(tmp, "c1.json"), "--out", os.path.join(tmp, "o1"), "--quiet")
C.ok("run" not in json.load(open(os.path.join(tmp, "o1", "report.json"))), "one layer: no block")
C.ok("Verdict per layer" in p.stdout and "Run (" not in p.stdout, "one layer: a verdict, no run lines")
C.done()
