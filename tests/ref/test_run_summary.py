"""Cross-check of the run-level block (docs/report.md, "The run-level
block"; src/analysis/run_summary.c) with NumPy/SciPy, from the per-layer
numbers of the same report.json:

  per model group (layers of one source, norm kind and d), log-log slopes of alpha, alpha*gamma
  and the affine slope against 1/std (none under 3 layers), and the
  alpha-std figure's fit line per group (its PNG's Legend text) equal to
  the group's alpha slope:
  OLS slope and intercept (numpy.polyfit), Pearson r (numpy.corrcoef), the
  slope's standard error and the t-based 95% interval
  (scipy.stats.linregress, scipy.stats.t.ppf(0.975, n - 2));
  per layer: the best surrogate by R^2 (shared-parameter fits only) and its
  ties (the fits whose bootstrap interval of the gap to it reaches 0), the
  gain over the affine map, the share of its residual removed and the
  label it decides (its interval against 10% and 50%), DyT's slope at the
  origin over the theory's (alpha gamma rho); the best by backprop error
  and its ties. (tests/ref/test_bootstrap.py checks the intervals.)

Runs: five synthetic d=48 layers of different scales, the three real
vit4mnist layers (d=64) and one synthetic d=40 layer (three groups), a
two-layer run (no slope) and a one-layer run (no block)."""
import json
import math
import os
import struct
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
lone = [{"synth": {"preset": "late", "tokens": 200, "dim": 40, "seed": 9}, "label": "lone"}]
json.dump({"name": "rs", "layers": synth + real + lone, "jacobian": {"probes": 2},
           "figures": [{"type": "alpha-std", "layers": ["*"]}]},
          open(os.path.join(tmp, "c8.json"), "w"))
run("run", os.path.join(tmp, "c8.json"), "--out", os.path.join(tmp, "o8"), "--quiet")
rep = json.load(open(os.path.join(tmp, "o8", "report.json")))
L, R = rep["layers"], rep["run"]
C.ok(R["layers"] == len(L) == 9, "run.layers counts every layer")
C.ok("loglog_vs_inv_std" not in R, "no slope across all layers (unrelated models)")

# model groups: the layers of one source, norm kind and d, in the order of
# their first layer
groups = []
for k, l in enumerate(L):
    key = (l["source"], l["norm"], l["dim"])
    for g in groups:
        if g["key"] == key:
            g["idx"].append(k)
            break
    else:
        groups.append({"key": key, "d": l["dim"], "idx": [k]})
C.ok([(G["source"], G["norm"], G["d"]) for G in R["groups"]] == [g["key"] for g in groups],
     "groups by source, norm and d")
C.ok([l["source"] for l in L] == ["synthetic"] * 5 + [DATA + "/"] * 3 + ["synthetic"],
     f"sources: {[l['source'] for l in L]}")
C.ok([g["d"] for g in R["groups"]] == [g["d"] for g in groups] == [48, 64, 40],
     f"groups by d in first-layer order: {[g['d'] for g in R['groups']]}")


def png_text(path):
    """The tEXt/iTXt chunks of a PNG, as a dict."""
    b, i, out = open(path, "rb").read(), 8, {}
    while i < len(b):
        n, t = struct.unpack(">I4s", b[i:i + 8])
        d = b[i + 8:i + 8 + n]
        if t == b"tEXt":
            k, v = d.split(b"\0", 1)
            out[k.decode()] = v.decode("latin-1")
        elif t == b"iTXt":
            k, rest = d.split(b"\0", 1)
            out[k.decode()] = rest[2:].split(b"\0", 2)[2].decode("utf-8")
        i += 12 + n
    return out


legend = png_text(os.path.join(tmp, "o8", "alpha_std.png")).get("Legend", "")
for g, G in zip(groups, R["groups"]):
    d = g["d"]
    names = [L[k]["name"] for k in g["idx"]]
    C.ok(G["layers"] == len(names) and G["names"] == names, f"d = {d}: layers {names}")
    inv_std = np.array([1.0 / L[k]["input_stats"]["std"] for k in g["idx"]])
    fits = [L[k]["fits"] for k in g["idx"]]
    ys = {
        "alpha": np.array([f["dyt"]["alpha"] for f in fits]),
        "alpha_gamma": np.array([f["dyt"]["alpha"] * f["dyt"]["gamma"] for f in fits]),
        "affine_slope": np.array([f["linear"]["slope"] for f in fits]),
    }
    for key, y in ys.items():
        got = G["loglog_vs_inv_std"][key]
        ok = (y > 0) & np.isfinite(y)
        lx, ly = np.log(inv_std[ok]), np.log(y[ok])
        n = len(lx)
        C.ok(got["layers"] == n, f"d = {d} {key}: layers used")
        if n < 3:
            C.ok(got["slope"] is None and got["r"] is None and got["ci95"] == [None, None],
                 f"d = {d} {key}: {n} layer(s), no slope")
            C.ok("needs 3" in got["status"], f"d = {d} {key}: status says why ({got['status']})")
            continue
        slope, icpt = np.polyfit(lx, ly, 1)
        lr = stats.linregress(lx, ly)
        t = stats.t.ppf(0.975, n - 2)
        C.rel(slope, got["slope"], 1e-9, f"d = {d} {key}: slope")
        C.abs(icpt, got["intercept"], 1e-9 * max(1, abs(icpt)), f"d = {d} {key}: intercept")
        C.rel(np.corrcoef(lx, ly)[0, 1], got["r"], 1e-9, f"d = {d} {key}: r")
        C.rel(lr.stderr, got["slope_se"], 1e-7, f"d = {d} {key}: slope_se")
        C.abs(slope - t * lr.stderr, got["ci95"][0], 1e-9 * (1 + t * lr.stderr),
              f"d = {d} {key}: ci95 low")
        C.abs(slope + t * lr.stderr, got["ci95"][1], 1e-9 * (1 + t * lr.stderr),
              f"d = {d} {key}: ci95 high")
        C.ok(got["status"] == "ok", f"d = {d} {key}: status ok")
    # the alpha-std figure's fit line of this group: the same numbers, same layers
    a = G["loglog_vs_inv_std"]["alpha"]
    line = [s for s in legend.split("\n") if s.startswith(f"d = {d}, ") and ": " in s]
    if a["slope"] is None:
        C.ok(not line, f"d = {d}: no fit line in the figure ({line})")
        C.ok("no slopes" in G["verdict"] and f"d = {d}" in R["verdict"], f"d = {d}: verdict")
        continue
    want = (f"d = {d}, {a['layers']} layers: \u03b1 \u221d (1/std)^{a['slope']:.2f} "
            f"[{a['ci95'][0]:.2f}, {a['ci95'][1]:.2f}]")
    C.ok(line == [want], f"d = {d}: figure legend {line} == {want!r}")
    C.ok(G["verdict"] in R["verdict"] and f"(1/std)^{a['slope']:.2f}" in G["verdict"],
         f"d = {d}: the run verdict carries the group's slope")

for l, v in zip(L, R["per_layer"]):
    name = l["name"]
    C.ok(v["name"] == name, f"{name}: order")
    B = l["bootstrap"]
    C.ok(B["status"] == "ok" and v["bootstrap"], f"{name}: bootstrapped")
    r2 = {f: l["fits"][f]["r2"] for f in RANKED if l["fits"].get(f, {}).get("r2") is not None}
    best = max(r2, key=r2.get)
    C.ok(v["best_r2"]["fit"] == best == B["best_r2"]["fit"],
         f"{name}: best R^2 {best}, got {v['best_r2']['fit']}")
    gaps = B["best_r2"]["gaps"]
    for f in r2:
        if f != best:
            C.abs(r2[best] - r2[f], gaps[f]["value"], 1e-12, f"{name}: R^2 gap to {f}")
    ties = sorted(f for f in r2 if f != best and gaps[f]["ci95"][0] <= 0)
    C.ok(sorted(v["best_r2"]["ties"]) == ties, f"{name}: R^2 ties {ties}, got {v['best_r2']['ties']}")
    aff = l["fits"]["linear"]["r2"]
    C.rel(r2[best] - aff, v["gain_r2"], 1e-9, f"{name}: gain_r2")
    rr = 1 - (1 - r2[best]) / (1 - aff)
    C.rel(rr, v["residual_removed"], 1e-9, f"{name}: residual_removed")
    lo, hi = B["residual_removed"]["ci95"]
    C.ok(v["residual_removed_ci"]["ci95"] == [lo, hi], f"{name}: its interval")
    kind = ("strongly saturating" if lo >= 0.5 else "saturating" if lo >= 0.1
            else "near-linear" if hi < 0.1 else "undecided")
    C.ok(v["kind"] == kind, f"{name}: kind {kind}, got {v['kind']}")
    dyt = l["fits"]["dyt"]
    C.rel(dyt["alpha"] * dyt["gamma"] * l["input_stats"]["rho"], v["slope_ratio"]["value"], 1e-12,
          f"{name}: slope at 0 over the theory's")
    sur = l["jacobian"]["surrogates"]
    bp = {f: sur[f]["backprop_rel_err"] for f in RANKED
          if f in sur and sur[f].get("backprop_rel_err") is not None}
    bbest = min(bp, key=bp.get)
    C.ok(v["best_backprop"]["fit"] == bbest == B["best_backprop"]["fit"],
         f"{name}: best backprop {bbest}, got {v['best_backprop']['fit']}")
    bgaps = B["best_backprop"]["gaps"]
    bties = sorted(f for f in bp if f != bbest and bgaps[f]["ci95"][0] <= 0)
    C.ok(sorted(v["best_backprop"]["ties"]) == bties,
         f"{name}: backprop ties {bties}, got {v['best_backprop']['ties']}")

# two layers of one model: no slope (two points always give r = 1); one layer: no block
config(os.path.join(tmp, "c2.json"), real[:2])
run("run", os.path.join(tmp, "c2.json"), "--out", os.path.join(tmp, "o2"), "--quiet")
rep2 = json.load(open(os.path.join(tmp, "o2", "report.json")))
g = rep2["run"]["groups"][0]["loglog_vs_inv_std"]["affine_slope"]
C.ok(g["layers"] == 2 and g["slope"] is None and g["r"] is None, "two layers: no slope, no r")
C.ok(g["ci95"] == [None, None] and g["slope_se"] is None, "two layers: no interval")
C.ok("needs 3" in g["status"], f"two layers: status says why ({g['status']})")
config(os.path.join(tmp, "c1.json"), real[:1])
p = run("run", os.path.join(tmp, "c1.json"), "--out", os.path.join(tmp, "o1"), "--quiet")
C.ok("run" not in json.load(open(os.path.join(tmp, "o1", "report.json"))), "one layer: no block")
C.ok("removed [95%]" in p.stdout and "Run:" not in p.stdout, "one layer: a verdict, no run lines")
C.done()
