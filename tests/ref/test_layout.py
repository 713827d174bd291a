"""Layout of every figure kind at paper sizes (issue 10), from the boxes each
PNG records and from its pixels.

Every kind is rendered at a single-column size (3.3 x 2.5 in), a
double-column size (6.9 x 3 in) and its default size, on the shipped real
samples (data/vit4mnist) and on the synthetic presets. Each PNG's "Layout"
text (figure.h) lists the box of every text item and legend and the
colours of each panel's data; from them the rules are checked:

  canvas   every text and legend box lies inside the image
  size     every text is at least 6 pt at print size
  overlap  no two text boxes overlap, and no text overlaps a legend box
  legend   a legend inside a panel hides no data: the same figure drawn
           with --legend none (same layout) has, inside the legend's box,
           no pixel of a curve's, marker's or line's colour and at most a
           sliver (3 %) of cloud pixels
  strip    a legend outside sits below every panel's area

The checker is shown to fail: with the legend forced onto the centre of a
scatter panel (over the S-curve) the "legend" rule must report it. Also
here: issue 13 item 6 (70 matching layers give 70 PNGs) and an all-NaN
layer (N = 0) drawn as an empty panel with a note, as fit reports it.
"""
import os
import re
import shutil
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import NC, TOP, Checker, run  # noqa: E402

KINDS = "scatter,scatter-grid,by-token,by-channel,jacobian,alpha-std,alpha-depth,tanh-family"
SIZES = [("single", "3.3x2.5"), ("double", "6.9x3"), ("default", None)]
SLIVER = 0.03


def layout_of(path):
    im = Image.open(path)
    text = im.info.get("Layout", "")
    boxes, colours, canvas = [], {}, None
    for line in text.splitlines():
        f = line.split()
        if f[0] == "canvas":
            canvas = (int(f[1]), int(f[2]))
        elif f[0] in ("text", "legend"):
            n = len(f)
            x, y, w, h, pt = map(float, f[n - 5:])
            boxes.append((f[0], " ".join(f[1:n - 5]), x, y, w, h, pt))
        elif f[0] == "colour":
            colours.setdefault(f[1], []).append((f[2], f[3]))
    return im, canvas, boxes, colours


def panels_of(im):
    out = {}
    for line in im.info.get("Panels", "").splitlines():
        m = re.match(r"panel (\d+): area (\d+) (\d+) (\d+) (\d+)", line)
        if m:
            out[int(m.group(1))] = tuple(map(int, m.groups()[1:]))
    return out


def overlap(a, b, tol=0.5):
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return (min(ax + aw, bx + bw) - max(ax, bx) > tol) and (min(ay + ah, by + bh) - max(ay, by) > tol)


def hexrgb(h):
    return np.array([int(h[1:3], 16), int(h[3:5], 16), int(h[5:7], 16)], dtype=float)


def legend_hides_data(path_auto, path_none):
    """Violations of the legend rule: boxes of inside legends of path_auto
    holding data in path_none."""
    bad = []
    im, canvas, boxes, colours = layout_of(path_auto)
    im0 = np.asarray(Image.open(path_none).convert("RGB"), dtype=float).copy()
    # text of the figure without a legend (its note may take the freed corner) is not data
    for t in layout_of(path_none)[2]:
        if t[0] == "text":
            im0[int(t[3]):int(np.ceil(t[3] + t[5])) + 1, int(t[2]):int(np.ceil(t[2] + t[4])) + 1] = 255
    for kind, what, x, y, w, h, pt in boxes:
        if kind != "legend" or not what.startswith("panel"):
            continue
        panel = what.split()[0]
        x0, y0, x1, y1 = int(np.floor(x)), int(np.floor(y)), int(np.ceil(x + w)), int(np.ceil(y + h))
        sub = im0[y0:y1, x0:x1].reshape(-1, 3)
        data = [hexrgb(c) for k, c in colours.get(panel, []) if k in ("curve", "mark", "line")]
        for c in data:
            near = np.sqrt(((sub - c) ** 2).sum(axis=1)) < 30
            if near.sum() > 0:
                bad.append(f"{os.path.basename(path_auto)}: legend of {panel} covers {near.sum()} px of colour {c}")
        clouds = [hexrgb(c) for k, c in colours.get(panel, []) if k == "cloud"]
        if clouds:
            # a cloud pixel: the cloud colour over white at some opacity
            c = clouds[0]
            white = np.array([255.0, 255.0, 255.0])
            t = ((white - sub) @ (white - c)) / max(((white - c) ** 2).sum(), 1)
            resid = np.sqrt((((white - sub) - np.outer(t, white - c)) ** 2).sum(axis=1))
            grid = np.abs(sub - 224).max(axis=1) <= 4  # the light grid (style.h GRID_RGB)
            cloud = (t > 0.2) & (t < 1.1) & (resid < 25) & ~grid
            if cloud.mean() > SLIVER:
                bad.append(f"{os.path.basename(path_auto)}: legend of {panel} covers "
                           f"{100 * cloud.mean():.1f} % cloud")
    return bad


def check_png(ck, path, where):
    im, canvas, boxes, colours = layout_of(path)
    name = f"{where}/{os.path.basename(path)}"
    ck.ok(canvas is not None and canvas == im.size, f"{name}: Layout canvas {canvas} vs {im.size}")
    if canvas is None:
        return
    W, H = canvas
    texts = [b for b in boxes if b[0] == "text"]
    legends = [b for b in boxes if b[0] == "legend"]
    ck.ok(len(texts) > 0, f"{name}: no text recorded")
    for kind, what, x, y, w, h, pt in boxes:
        ck.ok(x >= -0.5 and y >= -0.5 and x + w <= W + 0.5 and y + h <= H + 0.5,
              f"{name}: {kind} {what} box {x} {y} {w} {h} outside the {W}x{H} canvas")
        if kind == "text":
            ck.ok(pt >= 6.0 - 1e-6, f"{name}: {what} at {pt} pt (< 6)")
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            a, b = texts[i], texts[j]
            ck.ok(not overlap(a[2:6], b[2:6]), f"{name}: text {a[1]} overlaps {b[1]}")
    for lg in legends:
        for t in texts:
            ck.ok(not overlap(lg[2:6], t[2:6]), f"{name}: legend {lg[1]} overlaps text {t[1]}")
        if lg[1].startswith("outside"):
            for k, (ax, ay, aw, ah) in panels_of(im).items():
                ck.ok(lg[3] >= ay + ah, f"{name}: outside legend not below panel {k}")


def render(inputs, out, size, legend=None):
    args = ["plot", *inputs, "--figure", KINDS, "--out", out, "--quiet", "--no-jacobian"]
    if size:
        args += ["--size", size]
    if legend:
        args += ["--legend", legend]
    p = run(*args, check=False)
    return p


def main():
    ck = Checker("test_layout")
    tmp = tempfile.mkdtemp(prefix="nc_layout_")
    vit = [os.path.join(TOP, "data/vit4mnist", f"ln{k}_input.npy") for k in ("00", "05", "11")]
    syn = []
    for seed, preset in enumerate(("early", "middle", "late")):
        path = os.path.join(tmp, f"{preset}.npy")
        run("synth", "-o", path, "--preset", preset, "--tokens", "512", "--dim", "256",
            "--seed", str(seed + 1))
        syn.append(path)
    for label, inputs in (("vit4mnist", vit), ("synthetic", syn)):
        for sname, size in SIZES:
            out = os.path.join(tmp, f"{label}_{sname}")
            p = render(inputs, out, size)
            ck.ok(p.returncode == 0, f"{label} {sname}: plot failed: {p.stderr}")
            if p.returncode:
                continue
            none = out + "_none"
            p = render(inputs, none, size, legend="none")
            ck.ok(p.returncode == 0, f"{label} {sname} --legend none: {p.stderr}")
            pngs = sorted(f for f in os.listdir(out) if f.endswith(".png"))
            ck.ok(len(pngs) >= 8, f"{label} {sname}: {len(pngs)} PNGs")
            for f in pngs:
                check_png(ck, os.path.join(out, f), f"{label} {sname}")
                a, b = os.path.join(out, f), os.path.join(none, f)
                if os.path.exists(b):
                    same = panels_of(Image.open(a)) == panels_of(Image.open(b))
                    inside = any(x[0] == "legend" and x[1].startswith("panel") for x in layout_of(a)[2])
                    if inside:
                        ck.ok(same, f"{label} {sname} {f}: --legend none changed the panels")
                        for v in legend_hides_data(a, b):
                            ck.ok(False, v)
    # outlier-steps needs its experiment
    outl = os.path.join(tmp, "outlier.npy")
    run("synth", "-o", outl, "--preset", "outlier-steps", "--tokens", "9", "--dim", "100", "--seed", "7")
    for sname, size in SIZES:
        for legend in (None, "none"):
            out = os.path.join(tmp, f"outlier_{sname}{'_none' if legend else ''}")
            args = ["plot", outl, "--experiment", "outlier-steps", "--figure", "outlier-steps",
                    "--out", out, "--quiet", "--no-jacobian"]
            args += ["--size", size] if size else []
            args += ["--legend", legend] if legend else []
            p = run(*args, check=False)
            ck.ok(p.returncode == 0, f"outlier-steps {sname}: {p.stderr.strip()}")
        a = os.path.join(tmp, f"outlier_{sname}", "outlier_steps.png")
        if os.path.exists(a):
            check_png(ck, a, f"outlier {sname}")
            for v in legend_hides_data(a, os.path.join(tmp, f"outlier_{sname}_none", "outlier_steps.png")):
                ck.ok(False, v)
    # the rules can fail: a legend forced onto the S-curve
    forced = os.path.join(tmp, "forced")
    run("plot", syn[2], "--figure", "scatter", "--legend", "center", "--out", forced, "--quiet",
        "--no-jacobian")
    run("plot", syn[2], "--figure", "scatter", "--legend", "none", "--out", forced + "_none",
        "--quiet", "--no-jacobian")
    f = "late_scatter.png"
    v = legend_hides_data(os.path.join(forced, f), os.path.join(forced + "_none", f))
    ck.ok(len(v) > 0, "a legend forced over the curves was not caught by the legend rule")
    # issue 13 item 6: no silent cap on layers
    arr = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)
    many = []
    for k in range(70):
        path = os.path.join(tmp, f"m{k:02d}.npy")
        np.save(path, arr * (1 + k))
        many.append(path)
    p = run("plot", *many, "--figure", "scatter", "--out", os.path.join(tmp, "many"), "--quiet",
            "--no-jacobian", "--size", "3.3x2.5", "--dpi", "60", check=False)
    n = len([f for f in os.listdir(os.path.join(tmp, "many")) if f.endswith(".png")]) if p.returncode == 0 else -1
    ck.ok(n == 70, f"70 layers gave {n} scatter PNGs (exit {p.returncode}: {p.stderr.strip()})")
    # an all-NaN layer: fit accepts it; plot draws an empty panel with the reason
    nan = os.path.join(tmp, "nan.npy")
    np.save(nan, np.full((4, 8), np.nan, dtype=np.float32))
    p = run("plot", nan, "--figure", "scatter,by-token", "--out", os.path.join(tmp, "nan"), "--quiet",
            "--no-jacobian", check=False)
    ck.ok(p.returncode == 0, f"all-NaN layer: plot exit {p.returncode}: {p.stderr.strip()}")
    if p.returncode == 0:
        im = Image.open(os.path.join(tmp, "nan", "nan_scatter.png"))
        ck.ok("no usable token" in im.info.get("Title", "") + im.info.get("Layout", "") or
              "no data" in im.info.get("Title", ""), "all-NaN panel says why it is empty")
    shutil.rmtree(tmp, ignore_errors=True)
    ck.done()


if __name__ == "__main__":
    main()
