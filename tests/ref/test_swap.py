"""The swap test (scripts/swap_test.py) on both shipped models, against a
hand-written reference.

Drop-in files in the documented format (docs/swap.md: dropin_dyt,
dropin_dyt_alpha0, dropin_dyisru .safetensors, F32 tensors M.alpha or M.C
[1], M.weight and M.bias [d], __metadata__ format/surrogate/M.role) are
written here from each layer's dumped input and output (a least-squares
fit of weight and bias per channel at a fixed alpha or C) beside a real
`normcmp run` report. Then:

- stories260K (a PyTorch module: module replacement), 6 sampled sequences of
  24 tokens, one batch per sequence: the original loss, and for every layer
  and surrogate the loss with that one norm replaced, are recomputed here in
  plain PyTorch: the module set to a reference DynamicTanh / DyISRU written
  here (the DyT paper's module layout: parameters alpha [1], weight [d],
  bias [d], loaded with load_state_dict from the file's tensors), the
  next-token loss per sequence, the paired mean change and its standard
  error sd(d, ddof=1)/sqrt(B) in NumPy; also one role and all layers.
  Equal within 2e-6 nats (float32 losses of about 3).
- vit4mnist (TorchScript: graph rewrite), 8 digit images in batches of 2
  with labels (the per-layer entries of DyT at every layer, of the others at
  three layers; the code path is the same): the reference is an eager re-implementation of the ViT from
  the scripted graph's constants (first checked to give the scripted
  model's output exactly), with layer k's LayerNorm replaced by the
  reference module; per batch the cross-entropy and the accuracy, their
  paired changes and standard errors. Equal within 2e-6.
- Roles and depth come from report.json when it has them, else from the
  drop-in metadata; the default output sits beside the dump; every key of
  the results file is defined in docs/swap.md; bad folders and files give
  one line and exit 2, an unwritable -o exit 1 and no file; progress only
  on a terminal.
- When normcmp itself writes drop-in files (beside report.json), their
  parameters loaded into the reference DynamicTanh reproduce the RMSE it
  reports against the real and the recomputed output.
"""
import copy
import glob
import json
import math
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker, layernorm, rmsnorm, run  # noqa: E402

C = Checker("test_swap")
PY = sys.executable or "/usr/bin/python3"
SCRIPTS = os.path.join(TOP, "scripts")
SWAP = os.path.join(SCRIPTS, "swap_test.py")
DUMP = os.path.join(SCRIPTS, "dump_activations.py")
LLAMA2C = os.path.join(SCRIPTS, "llama2c_model.py")
EXAMPLE = os.path.join(SCRIPTS, "example_model.py")
MODELS = os.path.join(TOP, "data", "models")
TOL = 2e-6


# ------------------------------------------------------------------ fixtures

def write_st(path, tensors, meta):
    """A safetensors file of F32 tensors, written here independently."""
    header, off, blobs = {}, 0, []
    for k, a in tensors.items():
        b = np.asarray(a, "<f4").tobytes()
        header[k] = {"dtype": "F32", "shape": list(np.shape(a)), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    header["__metadata__"] = meta
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_st(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    meta = head.pop("__metadata__", {})
    out = {k: np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], "<f4")
           .reshape(e["shape"]).astype(np.float64) for k, e in head.items()}
    return out, meta


def per_channel(f, y):
    """weight, bias per channel minimising sum_t (w f + b - y)^2."""
    fm, ym = f.mean(0), y.mean(0)
    w = ((f - fm) * (y - ym)).sum(0) / ((f - fm) ** 2).sum(0)
    return w, ym - w * fm


def fixture_dropins(folder, dump_path, roles):
    t, _ = read_st(dump_path)
    mods = sorted({k.rsplit(".", 1)[0] for k in t if k.endswith(".input")})
    files = {s: ({}, {"format": "normcmp-dropin 1", "surrogate": s})
             for s in ("dyt", "dyt_alpha0", "dyisru")}
    for m in mods:
        x, y = t[f"{m}.input"], t[f"{m}.output"]
        for s, scal in (("dyt", 0.5 / x.std()), ("dyt_alpha0", 0.5), ("dyisru", (x * x).mean())):
            f = x / np.sqrt(x * x + scal) if s == "dyisru" else np.tanh(scal * x)
            w, b = per_channel(f, y)
            T, M = files[s]
            T[f"{m}.{'C' if s == 'dyisru' else 'alpha'}"] = [scal]
            T[f"{m}.weight"], T[f"{m}.bias"] = w, b
            M[f"{m}.role"] = roles(m)
    for s, (T, M) in files.items():
        write_st(os.path.join(folder, f"dropin_{s}.safetensors"), T, M)


def swap(*args, expect=0, cwd=TOP):
    p = subprocess.run([PY, SWAP, *args], capture_output=True, text=True, cwd=cwd)
    C.ok(p.returncode == expect, f"swap_test {' '.join(args)[-160:]}: exit {p.returncode}, "
                                 f"expected {expect}: {p.stderr.strip()[-400:]}")
    return p


def prepare(tmp, label, dump_args, roles, run_args=()):
    """Dump, normcmp run, drop-in files; returns (dump file, results folder)."""
    out = os.path.join(tmp, f"{label}.safetensors")
    p = subprocess.run([PY, DUMP, *dump_args, "-o", out, "-q"], capture_output=True, text=True,
                       cwd=TOP)
    C.ok(p.returncode == 0, f"{label}: dump: {p.stderr.strip()[-300:]}")
    res = os.path.join(tmp, label)
    run("run", os.path.join(tmp, f"{label}.json"), "--out", res, "--quiet", *run_args)
    rmse_check(label, res, out)
    fixture_dropins(res, out, roles)
    return out, res


# ------------------------------------------------------------------ reference modules

def reference_modules(torch):
    nn = torch.nn

    class DynamicTanh(nn.Module):
        """tanh(alpha x) * weight + bias, the DyT paper's module layout."""

        def __init__(self, d):
            super().__init__()
            self.alpha = nn.Parameter(torch.ones(1))
            self.weight = nn.Parameter(torch.ones(d))
            self.bias = nn.Parameter(torch.zeros(d))

        def forward(self, x):
            return torch.tanh(self.alpha * x) * self.weight + self.bias

    class DyISRU(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.C = nn.Parameter(torch.ones(1))
            self.weight = nn.Parameter(torch.ones(d))
            self.bias = nn.Parameter(torch.zeros(d))

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x * x + self.C)) + self.bias

    return DynamicTanh, DyISRU


def load_ref(results, s, layer, torch):
    DynamicTanh, DyISRU = reference_modules(torch)
    t, _ = read_st(os.path.join(results, f"dropin_{s}.safetensors"))
    sd = {k[len(layer) + 1:]: torch.tensor(v, dtype=torch.float32) for k, v in t.items()
          if k.rsplit(".", 1)[0] == layer}
    m = (DyISRU if s == "dyisru" else DynamicTanh)(sd["weight"].numel())
    m.load_state_dict(sd)
    return m


def paired(base, new):
    d = new - base
    n = math.sqrt(len(d))
    return (float(new.mean()), float(new.std(ddof=1) / n), float(d.mean()),
            float(d.std(ddof=1) / n))


def compare(got, base, new, what, acc=None):
    loss, lse, delta, se = paired(base, new)
    C.abs(loss, got["loss"], TOL, f"{what}: loss")
    C.abs(lse, got["loss_se"], TOL, f"{what}: loss_se")
    C.abs(delta, got["delta"], TOL, f"{what}: delta")
    C.abs(se, got["delta_se"], TOL, f"{what}: delta_se")
    if acc is not None:
        a, ase, da, sa = paired(*acc)
        C.abs(a, got["accuracy"], 1e-12, f"{what}: accuracy")
        C.abs(ase, got["accuracy_se"], 1e-12, f"{what}: accuracy_se")
        C.abs(da, got["accuracy_delta"], 1e-12, f"{what}: accuracy_delta")
        C.abs(sa, got["accuracy_delta_se"], 1e-12, f"{what}: accuracy_delta_se")


# ------------------------------------------------------------------ stories260K

def stories_roles(m):
    return "attn_norm" if "attention_norm" in m else "mlp_norm" if "ffn_norm" in m else "final_norm"


def stories(tmp, torch):
    binf = os.path.join(MODELS, "stories260K.bin")
    args = ["--model", f"{LLAMA2C}:load", "--checkpoint", binf,
            "--inputs-args", '{"batch": 6, "length": 24}']
    dump_file, res = prepare(tmp, "stories", args, stories_roles)
    p = swap(res, *args, "--loss", f"{LLAMA2C}:next_token_loss")
    print(f"stories260K: {p.stdout.strip()}")
    out = os.path.join(tmp, "stories.swap.json")
    C.ok(os.path.isfile(out) and p.stdout.startswith(f"wrote {out}: 11 layers, 6 batches"),
         f"stories: written beside the dump: {p.stdout.strip()}")
    if not os.path.isfile(out):
        return None
    with open(out) as f:
        r = json.load(f)
    sys.path.insert(0, SCRIPTS)
    import llama2c_model as L
    model = L.load(binf)
    toks = L.example_inputs(model, batch=6, length=24)

    def losses(swaps):
        saved = []
        for name, new in swaps.items():
            parent, _, attr = name.rpartition(".")
            par = model.get_submodule(parent) if parent else model
            saved.append((par, attr, getattr(par, attr)))
            setattr(par, attr, new)
        try:
            with torch.no_grad():
                return np.array([float(L.next_token_loss(model(toks[i:i + 1]), toks[i:i + 1]))
                                 for i in range(len(toks))])
        finally:
            for par, attr, old in saved:
                setattr(par, attr, old)
    base = losses({})
    C.abs(float(base.mean()), r["original"]["loss"], TOL, "stories: original loss")
    C.abs(float(base.std(ddof=1) / math.sqrt(6)), r["original"]["loss_se"], TOL,
          "stories: original loss_se")
    C.ok([L_["name"] for L_ in r["layers"]] == [f"layers.{i}.{n}" for i in range(5)
                                                 for n in ("attention_norm", "ffn_norm")]
         + ["norm"], "stories: the layers in report order")
    for L_ in r["layers"]:
        for s in ("dyt", "dyt_alpha0", "dyisru"):
            new = losses({L_["name"]: load_ref(res, s, L_["name"], torch)})
            compare(L_["swap"][s], base, new, f"stories {L_['name']} {s}")
        C.ok(L_["role"] == stories_roles(L_["name"]), f"stories {L_['name']}: role from the "
                                                      "drop-in metadata")
    role = next(g for g in r["roles"] if g["role"] == "mlp_norm")
    new = losses({n: load_ref(res, "dyisru", n, torch) for n in role["layers"]})
    compare(role["swap"]["dyisru"], base, new, "stories: role mlp_norm, dyisru")
    new = losses({n: load_ref(res, "dyt", n, torch) for n in r["all"]["layers"]})
    compare(r["all"]["swap"]["dyt"], base, new, "stories: all layers, dyt")
    C.ok([g["role"] for g in r["roles"]] == ["attn_norm", "mlp_norm", "final_norm"]
         and len(r["all"]["layers"]) == 11, "stories: roles in order of appearance, all 11")
    return r, res, dump_file, args


# ------------------------------------------------------------------ vit4mnist

def vit_reference(sm, torch):
    """An eager forward of vit4mnist from its graph's constants; norm(k, x)
    computes LayerNorm k (replaceable)."""
    g = sm.inlined_graph
    nodes = list(g.nodes())
    lin = [n.inputsAt(1).toIValue() for n in nodes if n.kind() == "quantized::linear_dynamic"]
    lns = [tuple(n.inputsAt(i).toIValue() for i in (2, 3, 4)) for n in nodes
           if n.kind() == "aten::layer_norm"]
    cls = next(n.inputsAt(0).toIValue() for n in nodes if n.kind() == "aten::expand")
    pos = next(n.inputsAt(1).toIValue() for n in nodes if n.kind() == "aten::add_")
    scale = next(n.inputsAt(1).toIValue() for n in nodes
                 if n.kind() == "aten::mul" and n.inputsAt(0).node().kind() == "aten::einsum")
    lin_ = lambda x, k: torch.ops.quantized.linear_dynamic(x, lin[k], True).float()  # noqa: E731
    gelu = torch.nn.functional.gelu

    def forward(img, swaps):
        def norm(k, x):
            m = swaps.get(f"ln{k:02d}")
            return m(x) if m is not None else torch.layer_norm(x, [64], *lns[k])
        b = img.shape[0]
        x = lin_(img.reshape(b, 1, 4, 7, 4, 7).permute(0, 2, 4, 3, 5, 1).reshape(b, 16, 49), 0)
        x = torch.cat([cls.expand(b, -1, -1), x], 1) + pos
        for blk in range(6):
            q, k, v = lin_(norm(2 * blk, x), 1 + 4 * blk).reshape(b, 17, 3, 8, 8) \
                .permute(2, 0, 3, 1, 4).unbind(0)
            att = (torch.einsum("bhid,bhjd->bhij", q, k) * scale).softmax(-1)
            o = torch.einsum("bhij,bhjd->bhid", att, v).permute(0, 2, 1, 3).reshape(b, 17, 64)
            x = lin_(o, 2 + 4 * blk) + x
            x = lin_(gelu(lin_(norm(2 * blk + 1, x), 3 + 4 * blk)), 4 + 4 * blk) + x
        return lin_(gelu(lin_(x[:, 0], 25)), 26)
    C.ok(len(lin) == 27 and len(lns) == 12, "vit reference: 27 linear layers, 12 layer norms")
    return forward


def vit_roles(m):
    return "attn_norm" if int(m[2:]) % 2 == 0 else "mlp_norm"


def vit(tmp, torch):
    ptl = os.path.join(MODELS, "vit4mnist.ptl")
    args = ["--checkpoint", ptl, "--inputs", f"{EXAMPLE}:digit_images",
            "--inputs-args", '{"n": 8}']
    # the TorchScript dump names its norms ln00..ln11: their roles come from
    # --role (docs/dropin.md), as a user would give them
    _, res = prepare(tmp, "vit", args, vit_roles,
                     ("--role", "ln(0[02468]|10)$=attn_norm", "--role", "ln(0[13579]|11)$=mlp_norm"))
    out = os.path.join(tmp, "vit-swap.json")
    p = swap(res, *args, "--labels", f"{EXAMPLE}:digit_labels", "--batch-size", "2", "-o", out)
    print(f"vit4mnist: {p.stdout.strip()}")
    if not os.path.isfile(out):
        return
    with open(out) as f:
        r = json.load(f)
    sys.path.insert(0, SCRIPTS)
    import example_model as E
    sm = torch.jit.load(ptl).eval()
    fwd = vit_reference(sm, torch)
    img, lab = E.digit_images(8), E.digit_labels(8)
    with torch.no_grad():
        C.ok(torch.equal(fwd(img, {}), sm(img)), "vit reference: the scripted model's output, "
                                                 "exactly")

    def measure(swaps):
        ls, acc = [], []
        with torch.no_grad():
            for i in range(0, 8, 2):
                y = fwd(img[i:i + 2], swaps)
                ls.append(float(torch.nn.functional.cross_entropy(y, lab[i:i + 2])))
                acc.append(float((y.argmax(-1) == lab[i:i + 2]).double().mean()))
        return np.array(ls), np.array(acc)
    base, bacc = measure({})
    C.abs(float(base.mean()), r["original"]["loss"], TOL, "vit: original loss")
    C.abs(float(bacc.mean()), r["original"]["accuracy"], 1e-12, "vit: original accuracy")
    C.ok(r["batches"] == 4 and r["batch_size"] == 2 and r["examples"] == 8
         and r["replace"] == "TorchScript graph rewrite of aten::layer_norm",
         "vit: 4 batches of 2, graph rewrite")
    for k, L_ in enumerate(r["layers"]):  # dyt at every layer, the others at three
        for s in ("dyt", "dyt_alpha0", "dyisru") if k in (0, 5, 11) else ("dyt",):
            new, nacc = measure({L_["name"]: load_ref(res, s, L_["name"], torch)})
            compare(L_["swap"][s], base, new, f"vit {L_['name']} {s}", (bacc, nacc))
    role = next(g for g in r["roles"] if g["role"] == "attn_norm")
    new, nacc = measure({n: load_ref(res, "dyt_alpha0", n, torch) for n in role["layers"]})
    compare(role["swap"]["dyt_alpha0"], base, new, "vit: role attn_norm, dyt_alpha0",
            (bacc, nacc))
    C.ok(r["layers"][3]["depth"] == 3 and r["layers"][3]["role"] == "mlp_norm",
         "vit: depth = report order without a report depth; role from the metadata")


# ------------------------------------------------------------------ the rest

def docs_keys(r):
    with open(os.path.join(TOP, "docs", "swap.md")) as f:
        docs = f.read()
    documented = set()
    for span in re.findall(r"`([^`\n]+)`", docs):
        documented |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span))
    keys = set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                keys.add(k)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(r)
    missing = sorted(keys - documented)
    C.ok(not missing, f"every results key is in docs/swap.md (missing: {missing})")


def report_roles(tmp, res, args):
    """Roles and depth from report.json override the drop-in metadata."""
    res2 = os.path.join(tmp, "stories-roles")
    shutil.copytree(res, res2)
    path = os.path.join(res2, "report.json")
    with open(path) as f:
        rep = json.load(f)
    for k, L in enumerate(rep["layers"]):
        L["role"], L["depth"] = ("embed_side" if k < 2 else "rest"), 100 + k
    with open(path, "w") as f:
        json.dump(rep, f)
    out = os.path.join(tmp, "roles.json")
    swap(res2, *args, "--loss", f"{LLAMA2C}:next_token_loss", "--surrogate", "dyt",
         "--match", r"^layers\.0\.", "-o", out)
    with open(out) as f:
        r = json.load(f)
    C.ok([(L["name"], L["role"], L["depth"]) for L in r["layers"]]
         == [("layers.0.attention_norm", "embed_side", 100), ("layers.0.ffn_norm", "embed_side", 101)],
         "roles and depth from report.json; --match picks layers")
    C.ok(r["surrogates"] == ["dyt"] and list(r["layers"][0]["swap"]) == ["dyt"]
         and [g["role"] for g in r["roles"]] == ["embed_side"], "--surrogate dyt only")


def errors(tmp, res, args):
    loss = ["--loss", f"{LLAMA2C}:next_token_loss"]
    p = swap(os.path.join(tmp, "nowhere"), *args, *loss, expect=2)
    C.ok(p.stderr.strip() == f"swap_test.py: {tmp}/nowhere: not a folder (expected normcmp's "
         "output folder, with report.json)", f"no folder: {p.stderr.strip()}")
    p = swap(res, *args, expect=2)
    C.ok("give --loss MODULE:CALLABLE or --labels MODULE:CALLABLE" in p.stderr
         and len(p.stderr.strip().splitlines()) == 1, f"no loss: {p.stderr.strip()}")
    bad = os.path.join(tmp, "bad")
    shutil.copytree(res, bad)
    for f in glob.glob(os.path.join(bad, "dropin_*")):
        os.unlink(f)
    p = swap(bad, *args, *loss, expect=2)
    C.ok("no dropin_*.safetensors" in p.stderr, f"no drop-ins: {p.stderr.strip()}")
    t, meta = read_st(os.path.join(res, "dropin_dyt.safetensors"))
    t2 = dict(t)
    t2["layers.1.ffn_norm.alpha"] = [0.5, 0.5]
    write_st(os.path.join(bad, "dropin_dyt.safetensors"), t2, meta)
    p = swap(bad, *args, *loss, expect=2)
    C.ok(p.stderr.strip() == f"swap_test.py: {bad}/dropin_dyt.safetensors: "
         "layers.1.ffn_norm.alpha: shape [2], expected [1]", f"bad shape: {p.stderr.strip()}")
    meta2 = dict(meta, format="something else")
    write_st(os.path.join(bad, "dropin_dyt.safetensors"), t, meta2)
    p = swap(bad, *args, *loss, expect=2)
    C.ok("__metadata__.format: 'something else', expected 'normcmp-dropin 1'" in p.stderr,
         f"bad format: {p.stderr.strip()}")
    t3 = dict(t)
    t3["no.such.layer.alpha"], t3["no.such.layer.weight"], t3["no.such.layer.bias"] = \
        [1.0], np.ones(64), np.zeros(64)
    write_st(os.path.join(bad, "dropin_dyt.safetensors"), t3, meta)
    rep_path = os.path.join(bad, "report.json")
    with open(rep_path) as f:
        rep = json.load(f)
    rep["layers"].append(dict(copy.deepcopy(rep["layers"][0]), name="no.such.layer"))
    with open(rep_path, "w") as f:
        json.dump(rep, f)
    p = swap(bad, *args, *loss, expect=2)
    C.ok(p.stderr.strip() == "swap_test.py: no.such.layer: in report.json but not among the "
         "model's modules (is it the model and the options the dump ran?)",
         f"unknown layer: {p.stderr.strip()}")
    afile = os.path.join(tmp, "a-file")
    open(afile, "w").close()
    target = os.path.join(afile, "x.json")
    p = swap(res, *args, *loss, "-o", target, expect=2)
    C.ok(p.stderr.strip() == f"swap_test.py: -o: {target}: cannot create its folder: {afile} is "
         "a file", f"-o under a file: {p.stderr.strip()}")
    C.ok(not glob.glob(os.path.join(tmp, "**", "x.json*"), recursive=True), "and no file")


def progress(res, args):
    """Progress lines on a terminal (a pty), none on a pipe."""
    cmd = [PY, SWAP, res, *args, "--loss", f"{LLAMA2C}:next_token_loss", "--surrogate", "dyt",
           "--match", "^norm$", "-o", os.path.join(os.path.dirname(res), "tty.json")]
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(TOP)
        os.execv(PY, cmd)
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
    os.waitpid(pid, 0)
    text = buf.decode(errors="replace")
    C.ok("[1/3] norm: dyt" in text and "[3/3] all layers: dyt" in text,
         f"progress on a terminal: {text[-300:]!r}")


def rmse_check(label, res, dump_file):
    """normcmp's own drop-ins (when it writes them): the reference
    DynamicTanh reproduces the RMSE it reports."""
    path = os.path.join(res, "dropin_dyt.safetensors")
    if not os.path.isfile(path):
        print(f"test_swap: {label}: normcmp wrote no dropin_dyt.safetensors; the RMSE check "
              "runs once it does", file=sys.stderr)
        return
    import torch
    t, meta = read_st(path)
    d, dmeta = read_st(dump_file)
    with open(os.path.join(res, "report.json")) as f:
        rep = {L["name"]: L for L in json.load(f)["layers"]}
    for m in sorted({k.rsplit(".", 1)[0] for k in t}):
        ref = load_ref(res, "dyt", m, torch)
        x = torch.tensor(d[f"{m}.input"], dtype=torch.float32)
        with torch.no_grad():
            yhat = ref(x).double().numpy()
        real = d[f"{m}.output"]
        kind, eps = dmeta[f"{m}.norm"], float(dmeta[f"{m}.eps"])
        rec = (rmsnorm if kind == "rmsnorm" else layernorm)(d[f"{m}.input"], eps)[0]
        rec = rec * d.get(f"{m}.weight", 1.0) + (d.get(f"{m}.bias", 0.0) if kind == "layernorm"
                                                 else 0.0)
        for key, want in (("rmse_vs_real", real), ("rmse_vs_recomputed", rec)):
            got = math.sqrt(float(((yhat - want) ** 2).mean()))
            C.rel(got, float(meta[f"{m}.{key}"]), 1e-4, f"{label} {m}: metadata {key}")
        C.ok("dropin" in rep.get(m, {}), f"{label} {m}: report.json has its dropin block")


def main():
    torch = C.torch()
    with tempfile.TemporaryDirectory() as tmp:
        got = stories(tmp, torch)
        vit(tmp, torch)
        if got:
            r, res, _, args = got
            docs_keys(r)
            report_roles(tmp, res, args)
            errors(tmp, res, args)
            progress(res, args)
    C.done()


if __name__ == "__main__":
    main()
