"""Layout of every figure kind at paper sizes, from the boxes each PNG
records and from its pixels: on the shipped three-layer sample, on a
synthetic 44-layer model of three widths and on outlier-heavy layers.

Every kind is rendered at a single-column size (3.3 x 2.5 in), a
double-column size (6.9 x 3 in) and its default size. Each PNG's "Layout"
text (figure.h) lists the box of every text item and legend (texts at the
smallest size any of their characters is drawn at, scripts included), the
colours of each panel's data, what each note says, and any text that had
to be cut. From them and from a second render without legend and point
labels (the same panel areas: data pixels only) the rules are checked:

  canvas   every text and legend box lies inside the image
  size     every text, its superscripts and subscripts, is at least 6 pt
  overlap  no two text boxes overlap; no text overlaps another legend box
  cut      no text is cut (with an ellipsis)
  area     every panel's data area is at least 0.8 in wide and 0.6 in tall
           (a grid), and a one-panel figure's at least 45 % of its height
  legend   a legend inside a panel hides no data: in its box the render
           without legend has no pixel of a curve's, marker's or line's
           colour and at most a sliver (3 %) of cloud pixels
  note     a note inside a panel covers no curve, marker or line pixel and
           at most 10 % cloud
  label    a point label covers no curve, marker or line pixel (alpha-std,
           against a render without labels, legends outside in both)
  named    a layer label left out is counted in a note ("12 of 44 layers
           named")
  numbers  no e-notation ("1.1e+05") in titles, legends or notes
  strip    a legend outside sits below every panel's area
  dots     a lone point of a cloud prints at least 1 pt across, at 300 and
           600 dpi too, at a contrast of at least 3:1 on white
  stripes  no empty pixel column through a cloud (the Jacobian at 100 to
           120 dpi)
  pinned   the legend of a few figures sits where the placement rule puts it

The checker is shown to fail: a legend forced onto the S-curve, and a note
box moved onto it. Also here: 70 matching layers give 70 PNGs, and an
all-NaN layer (N = 0) is drawn as an empty panel with a note, as fit
reports it.
"""
import json
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
# the fits the figures draw (Derf and the per-channel DyT, the slowest, are not)
FITS = ["linear", "dyt", "dyisru", "dyt_theory", "dyisru_theory"]
NOTE_SLIVER = 0.10
ENOTATION = re.compile(r"\d[eE][+-]?\d")


def layout_of(path):
    im = Image.open(path)
    text = im.info.get("Layout", "")
    boxes, colours, canvas, cuts, says = [], {}, None, [], []
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "canvas":
            canvas = (int(f[1]), int(f[2]))
        elif f[0] in ("text", "legend"):
            n = len(f)
            x, y, w, h, pt = map(float, f[n - 5:])
            boxes.append((f[0], " ".join(f[1:n - 5]), x, y, w, h, pt))
        elif f[0] == "colour":
            colours.setdefault(f[1], []).append((f[2], f[3]))
        elif f[0] == "cut":
            cuts.append(" ".join(f[1:]))
        elif f[0] == "say":
            says.append((f[1], line.split(" ", 2)[2] if len(f) > 2 else ""))
    return im, canvas, boxes, colours, cuts, says


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


def data_under(im0, colours, panel, box, cloud_limit, what):
    """Violations: data pixels of the panel's colours in box of im0."""
    x, y, w, h = box
    x0, y0, x1, y1 = int(np.floor(x)), int(np.floor(y)), int(np.ceil(x + w)), int(np.ceil(y + h))
    sub = im0[y0:y1, x0:x1].reshape(-1, 3)
    bad = []
    if sub.size == 0:
        return bad
    for c in [hexrgb(c) for k, c in colours.get(panel, []) if k in ("curve", "mark", "line")]:
        near = np.sqrt(((sub - c) ** 2).sum(axis=1)) < 30
        if near.sum() > 0:
            bad.append(f"{what} covers {near.sum()} px of colour {c}")
    clouds = [hexrgb(c) for k, c in colours.get(panel, []) if k == "cloud"]
    if clouds:
        # a cloud pixel: the cloud colour over white at some strength
        c = clouds[0]
        white = np.array([255.0, 255.0, 255.0])
        t = ((white - sub) @ (white - c)) / max(((white - c) ** 2).sum(), 1)
        resid = np.sqrt((((white - sub) - np.outer(t, white - c)) ** 2).sum(axis=1))
        grid = np.abs(sub - 224).max(axis=1) <= 4  # the light grid (style.h GRID_RGB)
        cloud = (t > 0.2) & (t < 1.1) & (resid < 25) & ~grid
        if cloud.mean() > cloud_limit:
            bad.append(f"{what} covers {100 * cloud.mean():.1f} % cloud")
    return bad


def hides_data(path_auto, path_none, kinds=("legend", "note", "label")):
    """Violations of the legend, note and label rules: boxes in path_auto
    over data of path_none (drawn without legend and labels, all its text
    blanked), for the panels whose areas are the same in both."""
    bad = []
    im, canvas, boxes, colours, cuts, says = layout_of(path_auto)
    same = panels_of(im)
    other = panels_of(Image.open(path_none))
    im0 = np.asarray(Image.open(path_none).convert("RGB"), dtype=float).copy()
    for t in layout_of(path_none)[2]:
        if t[0] == "text":
            im0[int(t[3]):int(np.ceil(t[3] + t[5])) + 1, int(t[2]):int(np.ceil(t[2] + t[4])) + 1] = 255
    name = os.path.basename(path_auto)
    for kind, what, x, y, w, h, pt in boxes:
        m = re.match(r"(panel(\d+))\b\.?(\w*)", what)
        if not m or same.get(int(m.group(2))) != other.get(int(m.group(2))):
            continue
        panel, part = m.group(1), m.group(3)
        if kind == "legend" and "legend" in kinds:
            bad += [f"{name}: legend of {panel} {v}" for v in data_under(im0, colours, panel, (x, y, w, h), SLIVER, "")]
        elif kind == "text" and part.startswith("note") and "note" in kinds:
            bad += [f"{name}: note of {panel} {v}" for v in data_under(im0, colours, panel, (x, y, w, h), NOTE_SLIVER, "")]
        elif kind == "text" and part.startswith("label") and "label" in kinds:
            bad += [f"{name}: {part} of {panel} {v}" for v in data_under(im0, colours, panel, (x, y, w, h), 1.0, "")]
    return bad


def legend_texts(boxes):
    """The legends' own texts: inside their box by design."""
    return {b[1] for b in boxes if b[0] == "text" and re.search(r"\.legend", b[1])}


def check_png(ck, path, where, nlayers=None):
    im, canvas, boxes, colours, cuts, says = layout_of(path)
    name = f"{where}/{os.path.basename(path)}"
    ck.ok(canvas is not None and canvas == im.size, f"{name}: Layout canvas {canvas} vs {im.size}")
    if canvas is None:
        return
    W, H = canvas
    dpi = float([l for l in im.info["Layout"].splitlines() if l.startswith("canvas")][0].split()[3])
    texts = [b for b in boxes if b[0] == "text"]
    legends = [b for b in boxes if b[0] == "legend"]
    own = legend_texts(boxes)
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
        where_lg = lg[1].split()[0]
        for t in texts:
            if t[1] in own and t[1].startswith(where_lg + ".legend"):
                ck.ok(t[2] >= lg[2] - 0.5 and t[2] + t[4] <= lg[2] + lg[4] + 0.5,
                      f"{name}: {t[1]} sticks out of its legend")
                continue
            ck.ok(not overlap(lg[2:6], t[2:6]), f"{name}: legend {lg[1]} overlaps text {t[1]}")
        if lg[1].startswith("outside"):
            for k, (ax, ay, aw, ah) in panels_of(im).items():
                ck.ok(lg[3] >= ay + ah, f"{name}: outside legend not below panel {k}")
    ck.ok(not cuts, f"{name}: cut text {cuts}")
    areas = panels_of(im)
    for k, (ax, ay, aw, ah) in areas.items():
        ck.ok(aw / dpi >= 0.8 - 1e-9 and ah / dpi >= 0.6 - 1e-9,
              f"{name}: panel {k} data area {aw / dpi:.2f} x {ah / dpi:.2f} in (< 0.8 x 0.6)")
        if len(areas) == 1:
            ck.ok(ah >= 0.45 * H, f"{name}: the panel is {100 * ah / H:.0f} % of the height (< 45 %)")
    said = " | ".join(t for _, t in says)
    for text in [im.info.get("Title", ""), im.info.get("Legend", ""), said]:
        ck.ok(not ENOTATION.search(text), f"{name}: e-notation in {text!r}")
    if nlayers is not None and os.path.basename(path).startswith("alpha_std"):
        named = sum(1 for t in texts if re.match(r"panel0\.label\d+$", t[1]))
        if named < nlayers:
            ck.ok(re.search(rf"\b{named} of {nlayers} layers named", said),
                  f"{name}: {named} of {nlayers} layers named, no note says so ({said!r})")


def check_dots(ck, path, dpi):
    """A lone point of the cloud: at least 1 pt across, contrast >= 3:1."""
    im, canvas, boxes, colours, cuts, says = layout_of(path)
    a = np.asarray(im.convert("RGB"), dtype=float)
    (x, y, w, h) = panels_of(im)[0]
    sub = a[y:y + h, x:x + w]
    core = hexrgb([c for k, c in colours["panel0"] if k == "cloud"][0])
    white = np.array([255.0, 255.0, 255.0])
    t = ((white - sub) @ (white - core)) / ((white - core) ** 2).sum()
    resid = np.sqrt((((white - sub) - t[..., None] * (white - core)) ** 2).sum(axis=2))
    cloud = (t > 0.2) & (resid < 6)  # opaque cloud colours; not grey anti-aliased text
    # lone dots: cloud components within a box of at most 3 pt, alone in a margin
    from scipy import ndimage
    lab, n = ndimage.label(cloud)
    sizes, contrast = [], []
    for k, sl in enumerate(ndimage.find_objects(lab), 1):
        hh, ww = sl[0].stop - sl[0].start, sl[1].stop - sl[1].start
        if max(hh, ww) * 72 / dpi > 3:
            continue
        ys, xs = sl
        if ys.start < 3 or xs.start < 3 or ys.stop > h - 3 or xs.stop > w - 3:
            continue  # at the frame: cut by it
        m0, m1 = ys.start - 3, xs.start - 3
        ring = sub[m0:ys.stop + 3, m1:xs.stop + 3][lab[m0:ys.stop + 3, m1:xs.stop + 3] != k]
        background = (np.abs(ring - 255).max(axis=1) <= 6) | (np.abs(ring - 224).max(axis=1) <= 6)
        if not background.all():
            continue  # not alone: beside other points, a curve, a legend or the frame
        sizes.append(min(hh, ww) * 72 / dpi)
        px = sub[sl][lab[sl] == k]
        contrast.append(1.05 / (luminance(np.median(px, axis=0)) + 0.05))
    ck.ok(len(sizes) >= 3, f"{os.path.basename(path)} at {dpi} dpi: {len(sizes)} lone dots found")
    if sizes:
        ck.ok(min(sizes) >= 1.0 - 1e-9, f"{path} at {dpi} dpi: a lone dot {min(sizes):.2f} pt across (< 1)")
        ck.ok(min(contrast) >= 3.0 - 0.05, f"{path} at {dpi} dpi: a lone dot at contrast {min(contrast):.2f} (< 3)")


def luminance(p):
    c = np.asarray(p, dtype=float) / 255.0
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]


def check_stripes(ck, path, dpi):
    """No empty pixel columns through a cloud (a raster stretched to a wider
    area than it was binned for): in the cloud's core, every column holds
    at least a quarter of the cloud pixels of its neighbours."""
    im, canvas, boxes, colours, cuts, says = layout_of(path)
    a = np.asarray(im.convert("RGB"), dtype=float)
    x, y, w, h = panels_of(im)[0]
    sub = a[y:y + h, x:x + w]
    core = hexrgb([c for k, c in colours["panel0"] if k == "cloud"][0])
    white = np.array([255.0, 255.0, 255.0])
    t = ((white - sub) @ (white - core)) / ((white - core) ** 2).sum()
    resid = np.sqrt((((white - sub) - t[..., None] * (white - core)) ** 2).sum(axis=2))
    col = ((t > 0.2) & (resid < 6)).sum(axis=0).astype(float)
    holes = [i for i in range(1, w - 1)
             if col[i - 1] >= 20 and col[i + 1] >= 20 and col[i] < 0.25 * (col[i - 1] + col[i + 1]) / 2]
    ck.ok(not holes, f"{os.path.basename(path)} at {dpi} dpi: empty columns through the cloud at {holes}")


def corner(path):
    """Where the legend inside panel 0 sits: 'upper right', 'lower left', ..."""
    im, canvas, boxes, colours, cuts, says = layout_of(path)
    ax, ay, aw, ah = panels_of(im)[0]
    for kind, what, x, y, w, h, pt in boxes:
        if kind == "legend" and what == "panel0":
            cx, cy = (x + w / 2 - ax) / aw, (y + h / 2 - ay) / ah
            v = "upper" if cy < 0.4 else "lower" if cy > 0.6 else "center"
            u = "left" if cx < 0.4 else "right" if cx > 0.6 else "center"
            return f"{v} {u}"
    return "outside"


def render(inputs, out, size, legend=None, labels=None, kinds=KINDS, extra=()):
    args = ["plot", *inputs, "--figure", kinds, "--out", out, "--quiet", "--no-jacobian",
            "--fits", ",".join(FITS), *extra]
    if size:
        args += ["--size", size]
    if legend:
        args += ["--legend", legend]
    if labels:
        args += ["--labels", labels]
    return run(*args, check=False)


def run_config(cfg, path, out, size, look):
    c = dict(cfg)
    figs = []
    for f in c["figures"]:
        f = dict(f, **{k: v for k, v in look.items() if k not in f or k == "labels"})
        if size:
            w, h = size.split("x")
            f.update(width=float(w), height=float(h))
        figs.append(f)
    c["figures"] = figs
    json.dump(c, open(path, "w"))
    return run("run", path, "--out", out, "--quiet", check=False)


def check_pair(ck, out, none, label, nlayers=None):
    if not os.path.isdir(out):
        ck.ok(False, f"{label}: no figures drawn")
        return []
    pngs = sorted(f for f in os.listdir(out) if f.endswith(".png"))
    for f in pngs:
        check_png(ck, os.path.join(out, f), label, nlayers)
        b = os.path.join(none, f)
        if os.path.exists(b):
            for v in hides_data(os.path.join(out, f), b):
                ck.ok(False, f"{label}: {v}")
    return pngs


def whole_model(tmp):
    """A synthetic model of 44 layers in three widths (d = 256 x 20, 768 x
    16, 64 x 8), token scales growing with depth; small in tokens."""
    layers = []
    k = 0
    for d, n in ((256, 20), (768, 16), (64, 8)):
        for q in range(n):
            preset = ("early", "middle", "late")[min(2, 3 * q // n)]
            layers.append({"synth": {"preset": preset, "tokens": 96, "dim": d, "seed": k + 1,
                                     "scale_median": round(0.4 * 1.1 ** k, 4)},
                           "label": f"blocks.{k}.norm"})
            k += 1
    # swap test results for every layer (docs/swap.md), for swap-depth:
    # loss changes of a few hundredths with their standard errors, a role
    # per layer (the config's patterns: even blocks attention, odd MLP)
    rng = np.random.default_rng(44)
    sw = []
    for q in range(k):
        e = {}
        for sname, par in (("dyt", "alpha"), ("dyt_alpha0", "alpha"), ("dyisru", "C")):
            d = float(rng.normal(0.02 if q < 6 else 0.0, 0.03))
            e[sname] = {par: 0.5, "loss": 2 + d, "delta": d,
                        "delta_se": float(rng.uniform(0.004, 0.04)), "status": "ok"}
        sw.append({"name": f"blocks.{q}.norm", "swap": e})
    swap = os.path.join(tmp, "m44.swap.json")
    json.dump({"format": "normcmp swap test", "version": 1,
               "loss": {"name": "cross-entropy", "unit": "nats per token"}, "batches": 16,
               "original": {"loss": 2.0, "loss_se": 0.05},
               "surrogates": ["dyt", "dyt_alpha0", "dyisru"], "layers": sw,
               "all": {"swap": {"dyt": {"delta": 0.31, "delta_se": 0.04}}}}, open(swap, "w"))
    return {"name": "m44", "jacobian": {"enabled": False}, "layers": layers, "fits": FITS,
            "swap": swap, "roles": {r"blocks\.\d*[02468]\.": "attn_norm",
                                    r"blocks\.\d*[13579]\.": "mlp_norm"},
            "figures": [{"type": "scatter-grid"}, {"type": "alpha-std"}, {"type": "alpha-depth"},
                        {"type": "swap-depth"},
                        {"type": "alpha-std", "legend": "outside", "name": "alpha_std_out"},
                        {"type": "scatter", "layers": ["blocks.0.norm", "blocks.43.norm"]},
                        {"type": "by-token", "layers": ["blocks.35.norm"]},
                        {"type": "jacobian", "layers": ["blocks.19.norm"]}]}


def outlier_layers(tmp):
    """One token 50x the others; one channel 40x; a wide late layer."""
    base = os.path.join(tmp, "base.npy")
    run("synth", "-o", base, "--preset", "middle", "--tokens", "512", "--dim", "256", "--seed", "5")
    x = np.load(base)
    x[7] *= 50
    tok = os.path.join(tmp, "tok50.npy")
    np.save(tok, x)
    ch = os.path.join(tmp, "ch40.npy")
    run("synth", "-o", ch, "--preset", "early", "--tokens", "512", "--dim", "256", "--seed", "6",
        "--outliers", "1", "--outlier-mag", "40", "--outlier-spread", "0")
    wide = os.path.join(tmp, "wide.npy")
    run("synth", "-o", wide, "--preset", "late", "--tokens", "256", "--dim", "2048", "--seed", "9")
    return [tok, ch, wide]


def samples(ck, tmp):
    vit = [os.path.join(TOP, "data/vit4mnist", f"ln{k}_input.npy") for k in ("00", "05", "11")]
    syn = []
    for seed, preset in enumerate(("early", "middle", "late")):
        path = os.path.join(tmp, f"{preset}.npy")
        run("synth", "-o", path, "--preset", preset, "--tokens", "512", "--dim", "256",
            "--seed", str(seed + 1))
        syn.append(path)
    for label, inputs in (("vit4mnist", vit), ("synthetic", syn),
                          ("outliers", outlier_layers(tmp))):
        for sname, size in SIZES:
            out = os.path.join(tmp, f"{label}_{sname}")
            p = render(inputs, out, size)
            ck.ok(p.returncode == 0, f"{label} {sname}: plot failed: {p.stderr}")
            none = out + "_none"
            q = render(inputs, none, size, legend="none", labels="none")
            ck.ok(q.returncode == 0, f"{label} {sname} --legend none: {q.stderr}")
            if p.returncode == 0:
                pngs = check_pair(ck, out, none, f"{label} {sname}")
                ck.ok(len(pngs) >= 8, f"{label} {sname}: {len(pngs)} PNGs")
    return vit, syn


def model44(ck, tmp):
    cfg = whole_model(tmp)
    for sname, size in SIZES:
        outs = {}
        for tag, look in (("auto", {}), ("none", {"legend": "none", "labels": "none"})):
            out = os.path.join(tmp, f"m44_{sname}_{tag}")
            p = run_config(cfg, out + ".json", out, size, look)
            ck.ok(p.returncode == 0, f"44 layers {sname} {tag}: {p.stderr.strip()}")
            outs[tag] = out
        # the labels against a render without them, the legend outside in both
        check_pair(ck, outs["auto"], outs["none"], f"44 layers {sname}", nlayers=44)
        a, b = (os.path.join(outs[t], "alpha_std_out.png") for t in ("auto", "none"))
        if os.path.exists(a) and os.path.exists(b):
            same = panels_of(Image.open(a)) == panels_of(Image.open(b))
            ck.ok(same, f"44 layers {sname}: alpha-std with and without labels: panels moved")
            named = sum(1 for t in layout_of(a)[2] if re.match(r"panel0\.label\d+$", t[1]))
            ck.ok(named >= 3, f"44 layers {sname}: {named} layer labels on alpha-std")


def can_fail(ck, tmp, syn):
    """The legend and note rules can fail."""
    forced = os.path.join(tmp, "forced")
    run("plot", syn[2], "--figure", "scatter", "--legend", "center", "--out", forced, "--quiet",
        "--no-jacobian")
    run("plot", syn[2], "--figure", "scatter", "--legend", "none", "--labels", "none", "--out",
        forced + "_none", "--quiet", "--no-jacobian")
    f = "late_scatter.png"
    a, b = os.path.join(forced, f), os.path.join(forced + "_none", f)
    v = hides_data(a, b, kinds=("legend",))
    ck.ok(len(v) > 0, "a legend forced over the curves was not caught by the legend rule")
    # the note rule: the note's box moved onto the middle of the panel (the S-curve)
    im = Image.open(a)
    ax, ay, aw, ah = panels_of(im)[0]
    _, _, boxes, colours, _, _ = layout_of(a)
    note = [bx for bx in boxes if bx[1] == "panel0.note"]
    ck.ok(len(note) == 1, "the forced scatter has a note")
    if note:
        w, h = note[0][4], note[0][5]
        moved = (ax + aw / 2 - w / 2, ay + ah / 2 - h / 2, w, h)
        im0 = np.asarray(Image.open(b).convert("RGB"), dtype=float)
        ck.ok(len(data_under(im0, colours, "panel0", moved, NOTE_SLIVER, "note")) > 0,
              "a note over the S-curve was not caught by the note rule")


def dots_and_pins(ck, tmp, vit, syn):
    for dpi in (300, 600):
        out = os.path.join(tmp, f"dots{dpi}")
        p = render([syn[2]], out, "3.3x2.5", kinds="scatter", extra=("--dpi", str(dpi)))
        ck.ok(p.returncode == 0, f"scatter at {dpi} dpi: {p.stderr.strip()}")
        if p.returncode == 0:
            check_dots(ck, os.path.join(out, "late_scatter.png"), dpi)
            check_png(ck, os.path.join(out, "late_scatter.png"), f"{dpi} dpi")
    # the Jacobian cloud of the gallery's layer at the resolutions that striped it
    for dpi in (100, 110, 120):
        out = os.path.join(tmp, f"stripes{dpi}")
        p = render([vit[2]], out, "3.3x2.5", kinds="jacobian", extra=("--dpi", str(dpi)))
        ck.ok(p.returncode == 0, f"jacobian at {dpi} dpi: {p.stderr.strip()}")
        if p.returncode == 0:
            check_stripes(ck, os.path.join(out, "ln11_jacobian.png"), dpi)
    # where the placement rule puts the legends of the ViT figures (a change of
    # the rule moved every one of them: pinned here)
    out = os.path.join(tmp, "vit4mnist_default")
    want = {"ln11_scatter.png": "upper left", "ln00_scatter.png": "upper left",
            "ln11_by_token.png": "upper left", "ln05_by_channel.png": "upper left"}
    for f, pos in want.items():
        got = corner(os.path.join(out, f)) if os.path.exists(os.path.join(out, f)) else "missing"
        ck.ok(got == pos, f"vit4mnist default {f}: legend {got}, expected {pos}")


def sweeps(ck, tmp):
    """The sweep figures of one real layer, at every size."""
    cfg = os.path.join(tmp, "sweep.json")
    json.dump({"name": "sw", "fits": FITS, "jacobian": {"enabled": False},
               "layers": [{"file": os.path.join(TOP, "data/vit4mnist/ln05_input.npy"),
                           "label": "ln05"}],
               "sweep": {"alpha": "auto", "C": "auto", "steps": 40, "csv": False}}, open(cfg, "w"))
    for sname, size in SIZES:
        out = os.path.join(tmp, f"sweep_{sname}")
        extra = ["--size", size] if size else []
        p = run("sweep", cfg, "--out", out, "--quiet", *extra, check=False)
        q = run("sweep", cfg, "--out", out + "_none", "--quiet", "--legend", "none", *extra,
                check=False)
        ck.ok(p.returncode == 0 and q.returncode == 0, f"sweep {sname}: {p.stderr}{q.stderr}")
        if p.returncode == 0 and q.returncode == 0:
            pngs = check_pair(ck, out, out + "_none", f"sweep {sname}")
            ck.ok(len(pngs) == 2, f"sweep {sname}: {pngs}")


def main():
    ck = Checker("test_layout")
    tmp = tempfile.mkdtemp(prefix="nc_layout_")
    vit, syn = samples(ck, tmp)
    model44(ck, tmp)
    sweeps(ck, tmp)
    can_fail(ck, tmp, syn)
    dots_and_pins(ck, tmp, vit, syn)
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
            for v in hides_data(a, os.path.join(tmp, f"outlier_{sname}_none", "outlier_steps.png")):
                ck.ok(False, v)
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
