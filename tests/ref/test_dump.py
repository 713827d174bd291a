"""Test of scripts/dump_activations.py (PyTorch forward hooks -> safetensors
-> `normcmp run`) on the tiny example models, a TorchScript copy of one,
a made-up model with awkward norms, and the two real checkpoints in
data/models (NORMCMP_MODELS overrides).

The files are parsed here independently (the u64 header length, the JSON
header, contiguous offsets, F32/BF16 decoding), every captured output is
compared with LayerNorm / RMSNorm of the captured input with the captured
weight and bias recomputed in NumPy float64 (1e-5 absolute on outputs of
size ~1-10, i.e. float32 rounding), gradients are compared with ones taken
by autograd here, and normcmp's report on the generated config must show
one layer per module and a real-output check below 1e-5.

PyTorch is required (`make test` installs it through scripts/deps.sh test);
without it the test fails.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import NC, TOP, Checker, layernorm, rmsnorm  # noqa: E402

C = Checker("test_dump")
DUMP = os.path.join(TOP, "scripts", "dump_activations.py")
EXAMPLE = os.path.join(TOP, "scripts", "example_model.py")
LLAMA2C = os.path.join(TOP, "scripts", "llama2c_model.py")
MODELS = os.environ.get("NORMCMP_MODELS", os.path.join(TOP, "data", "models"))
PY = sys.executable or "/usr/bin/python3"


def dump(*args, expect=0):
    p = subprocess.run([PY, DUMP, *args], capture_output=True, text=True, cwd=TOP)
    C.ok(p.returncode == expect,
         f"dump {' '.join(args)}: exit {p.returncode}, expected {expect}: {p.stderr.strip()[-400:]}")
    return p


def read_safetensors(path):
    """(tensors as float64 arrays, dtypes, metadata), checking the layout."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    C.ok(n % 8 == 0 and 8 + n <= len(b), f"{path}: header length {n} padded to 8")
    head = json.loads(b[8:8 + n].decode("utf-8"))
    meta = head.pop("__metadata__", None)
    C.ok(isinstance(meta, dict) and all(isinstance(k, str) and isinstance(v, str)
                                        for k, v in meta.items()), "metadata: strings")
    data = b[8 + n:]
    spans = sorted(e["data_offsets"] for e in head.values())
    C.ok(spans[0][0] == 0 and spans[-1][1] == len(data)
         and all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1)),
         f"{path}: data offsets contiguous from 0 to the end")
    out, dtypes = {}, {}
    for name, e in head.items():
        s, t = e["data_offsets"]
        raw = data[s:t]
        cnt = int(np.prod(e["shape"])) if e["shape"] else 1
        dt = e["dtype"]
        dtypes[name] = dt
        if dt == "F32":
            a = np.frombuffer(raw, "<f4")
        elif dt == "F16":
            a = np.frombuffer(raw, "<f2")
        elif dt == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            C.ok(False, f"{name}: unexpected dtype {dt}")
            continue
        C.ok(a.size == cnt, f"{name}: {len(raw)} bytes for shape {e['shape']} {dt}")
        out[name] = a.astype(np.float64).reshape(e["shape"])
    return out, dtypes, meta


def recompute(x, kind, eps, w, b):
    y = (layernorm(x, eps) if kind == "layernorm" else rmsnorm(x, eps))[0]
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def check_dump(path, modules, kind, eps, rows, d, grad, dtype="F32", tol=1e-5, label=""):
    """Names, shapes, dtypes, metadata and output == norm(input) per module."""
    t, dts, meta = read_safetensors(path)
    label = label or os.path.basename(path)
    want = set()
    for m in modules:
        want |= {f"{m}.input", f"{m}.output"}
        want |= {f"{m}.{s}" for s in ("weight", "bias") if f"{m}.{s}" in t}
        if grad:
            want.add(f"{m}.grad_output")
    C.ok(set(t) == want, f"{label}: tensor names {sorted(set(t) ^ want)[:6]} differ")
    C.ok(all(v == dtype for v in dts.values()), f"{label}: every tensor {dtype}")
    C.ok(json.loads(meta.get("modules", "[]")) == list(modules), f"{label}: metadata modules")
    C.ok("command" in meta and "dump_activations.py" in meta["command"], f"{label}: command")
    worst = 0.0
    for m in modules:
        if f"{m}.input" not in t:
            continue
        x, y = t[f"{m}.input"], t[f"{m}.output"]
        C.ok(x.shape == (rows, d) and y.shape == (rows, d),
             f"{label} {m}: shapes {x.shape} {y.shape}, expected ({rows}, {d})")
        C.ok(meta.get(f"{m}.norm") == kind, f"{label} {m}: norm {meta.get(f'{m}.norm')}")
        C.ok(float(meta.get(f"{m}.eps", "nan")) == eps, f"{label} {m}: eps {meta.get(f'{m}.eps')}")
        w, b = t.get(f"{m}.weight"), t.get(f"{m}.bias")
        C.ok(w is None or w.shape == (d,), f"{label} {m}: weight shape")
        diff = float(np.abs(recompute(x, kind, eps, w, b) - y).max())
        worst = max(worst, diff)
        C.ok(diff < tol, f"{label} {m}: output vs recomputed {kind}: {diff:.3g} >= {tol:g}")
        if grad:
            g = t[f"{m}.grad_output"]
            C.ok(g.shape == (rows, d) and np.isfinite(g).all() and np.abs(g).max() > 0,
                 f"{label} {m}: grad_output finite, nonzero, shape {g.shape}")
    return t, meta, worst


def check_report(config, modules, kinds, eps, grad, tol=1e-5, label=""):
    label = label or os.path.basename(config)
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([NC, "run", config, "--out", out, "--quiet"], capture_output=True,
                           text=True)
        C.ok(p.returncode == 0, f"{label}: normcmp run failed: {p.stderr.strip()}")
        if p.returncode:
            return
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
    layers = rep["layers"]
    C.ok([L["name"] for L in layers] == list(modules),
         f"{label}: report layers {[L['name'] for L in layers][:4]}...")
    for L in layers:
        C.ok(L["norm"] == kinds and L["eps"] == eps, f"{label} {L['name']}: norm/eps in report")
        chk = L.get("real_output_check", {})
        C.ok(chk.get("max_abs_diff", 1.0) < tol,
             f"{label} {L['name']}: real_output_check {chk.get('max_abs_diff')} >= {tol:g}")
        C.ok(chk.get("affine_applied") is True, f"{label} {L['name']}: affine applied")
    roles = {(i.get("layer"), i.get("role")) for i in rep.get("inputs", [])}
    if grad:
        C.ok(all((m, "grad_output") in roles for m in modules), f"{label}: grad_output read")


def tiny(tmp, torch):
    """nn.LayerNorm model: hooks, gradients against autograd here, the config."""
    sys.path.insert(0, os.path.join(TOP, "scripts"))
    import example_model as E
    mods = ["blocks.0.ln1", "blocks.0.ln2", "blocks.1.ln1", "blocks.1.ln2", "blocks.2.ln1",
            "blocks.2.ln2", "ln_f"]
    out = os.path.join(tmp, "sub", "tiny.safetensors")
    dump("--model", f"{EXAMPLE}:tiny_layernorm", "-o", out, "--grad", "--tokens", "100")
    cfg = os.path.join(tmp, "sub", "tiny.json")
    C.ok(os.path.isfile(cfg), "config written next to the dump")
    with open(cfg) as f:
        c = json.load(f)
    C.ok(c["name"] == "tiny" and len(c["layers"]) == 7
         and all(L["file"] == "tiny.safetensors" for L in c["layers"])
         and [L["tensor"] for L in c["layers"]] == [f"{m}.input" for m in mods]
         and all(L["norm"] == "layernorm" and L["eps"] == 1e-5 for L in c["layers"]),
         "tiny config: one layer per module, relative file, norm and eps")
    t, meta, _ = check_dump(out, mods, "layernorm", 1e-5, 100, 48, True)
    C.ok(meta.get("ln_f.class") == "LayerNorm", "metadata class")
    # the same numbers by hand: input of the first norm, gradient of the last
    m = E.tiny_layernorm()
    tok = m.example_inputs()
    x = m.tok(tok) + m.pos[:tok.shape[1]]
    C.ok(np.array_equal(x.detach().reshape(-1, 48)[:100].double().numpy(),
                        t["blocks.0.ln1.input"]), "blocks.0.ln1.input = embedding + position")
    for blk in m.blocks:
        x = blk(x)
    h = m.ln_f(x)
    h.retain_grad()
    m.head(h).pow(2).sum().backward()
    want = h.grad.reshape(-1, 48)[:100].double().numpy()
    err = float(np.abs(t["ln_f.grad_output"] - want).max() / np.abs(want).max())
    C.ok(err < 1e-6, f"ln_f.grad_output = the autograd gradient (rel {err:.3g})")
    check_report(cfg, mods, "layernorm", 1e-5, True, label="tiny")

    # the same model scripted: graph capture, names from the weights' attributes
    # a state_dict loaded into a differently seeded model, hooks; and the
    # same model scripted, captured from its graph: the same tensors
    sd = os.path.join(tmp, "sd.pt")
    torch.save(E.tiny_layernorm().state_dict(), sd)
    scripted = os.path.join(tmp, "tiny_scripted.pt")
    torch.jit.script(E.tiny_layernorm()).save(scripted)
    a = os.path.join(tmp, "sd.safetensors")
    b = os.path.join(tmp, "scripted.safetensors")
    common = ["--input-shape", "2,24", "--input-vocab", "256", "--grad"]
    dump("--model", f"{EXAMPLE}:tiny_layernorm", "--model-args", '{"seed": 9}', "--checkpoint", sd,
         "-o", a, "--config", "none", *common)
    dump("--checkpoint", scripted, "-o", b, *common)
    ta, _, _ = read_safetensors(a)
    tb, _, mb = read_safetensors(b)
    C.ok(not os.path.exists(os.path.join(tmp, "sd.json")), "--config none writes no config")
    C.ok(np.array_equal(ta["ln_f.weight"], t["ln_f.weight"]), "--checkpoint state_dict loaded")
    C.ok(sorted(ta) == sorted(tb), "TorchScript capture: the same tensor names as hooks")
    C.ok(all(np.array_equal(ta[k], tb[k]) for k in ta if k in tb),
         "TorchScript capture: the same values as hooks, gradients included")
    C.ok(mb.get("capture", "").startswith("TorchScript"), "TorchScript capture recorded")


def tiny_rms(tmp):
    mods = ["blocks.0.ln1", "blocks.0.ln2", "blocks.1.ln1", "blocks.1.ln2", "blocks.2.ln1",
            "blocks.2.ln2", "ln_f"]
    f32 = os.path.join(tmp, "rms.safetensors")
    bf = os.path.join(tmp, "rms_bf16.safetensors")
    dump("--model", f"{EXAMPLE}:tiny_rmsnorm", "-o", f32)
    dump("--model", f"{EXAMPLE}:tiny_rmsnorm", "-o", bf, "--dtype", "bf16",
         "--config", os.path.join(tmp, "cfg", "rms_bf16.json"), "--name", "bf")
    t, _, _ = check_dump(f32, mods, "rmsnorm", 1e-6, 1024, 48, False)
    C.ok("blocks.0.ln1.bias" not in t, "RMSNorm: no bias written")
    check_report(os.path.join(tmp, "rms.json"), mods, "rmsnorm", 1e-6, False, label="tiny rms")
    tb, dts, _ = read_safetensors(bf)
    C.ok(set(dts.values()) == {"BF16"}, "--dtype bf16 writes BF16")
    rel = max(float(np.max(np.abs(tb[k] - t[k]) / np.maximum(np.abs(t[k]), 1e-30))) for k in t)
    C.ok(rel <= 2.0 ** -8, f"BF16 = float32 rounded to 8 bits ({rel:.3g})")
    with open(os.path.join(tmp, "cfg", "rms_bf16.json")) as f:
        c = json.load(f)
    C.ok(c["name"] == "bf" and c["layers"][0]["file"] == "../rms_bf16.safetensors",
         "config in another folder: path relative to it")
    check_report(os.path.join(tmp, "cfg", "rms_bf16.json"), mods, "rmsnorm", 1e-6, False,
                 tol=0.05, label="tiny rms bf16")


ODD = '''
import torch
from torch import nn

class T5LayerNorm(nn.Module):          # an RMSNorm despite its name
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.variance_epsilon = 1e-6
    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

class GemmaRMSNorm(nn.Module):         # multiplies by 1 + weight
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d) * 0.1)
        self.eps = 1e-6
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * (1 + self.weight)

class MyLayerNorm(nn.Module):          # named LayerNorm, computes an RMSNorm
    def __init__(self, d):
        super().__init__()
        self.eps = 1e-5
    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

class Odd(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.shared = nn.LayerNorm(16)
        self.t5, self.gem, self.my = T5LayerNorm(16), GemmaRMSNorm(16), MyLayerNorm(16)
        self.unused, self.kw = nn.LayerNorm(16), nn.LayerNorm(16)
        self.img = nn.LayerNorm([4, 4])
        self.lin = nn.Linear(16, 16)
    def forward(self, x):
        h = self.shared(self.lin(self.shared(x)))
        h = self.t5(h) + self.gem(h) + self.my(h + 1.0) + self.kw(input=h)
        return h + self.img(h.view(*h.shape[:-1], 4, 4)).flatten(-2)

def odd():
    return Odd()

def example_inputs(model):
    return torch.randn(3, 10, 16, generator=torch.Generator().manual_seed(1)) * 3
'''


def odd(tmp):
    path = os.path.join(tmp, "odd_model.py")
    with open(path, "w") as f:
        f.write(ODD)
    out = os.path.join(tmp, "odd.safetensors")
    p = dump("--model", f"{path}:odd", "-o", out, "--tokens", "40", "--grad")
    t, _, meta = read_safetensors(out)
    C.ok(json.loads(meta["modules"]) == ["shared", "t5", "gem", "my", "img"],
         f"odd: hooked modules {meta['modules']} (unused and keyword-called left out)")
    C.ok("kw:" in p.stderr and "unused:" in p.stderr, "odd: warnings for kw and unused")
    C.ok(t["shared.input"].shape == (40, 16) and meta["shared.calls"] == "2",
         "odd: a module called twice: both calls, cut at --tokens")
    x = t["shared.input"]
    C.ok(np.array_equal(x[:30], example_x(tmp)), "odd: first call's rows first")
    C.ok(meta["t5.norm"] == "rmsnorm" and meta["t5.eps"] == "1e-06", "odd: T5LayerNorm is RMS")
    C.ok(meta["my.norm"] == "rmsnorm" and meta["my.norm_source"] == "output check",
         "odd: kind switched by the output check")
    C.ok("gem.weight_offset" in meta, "odd: Gemma (1 + weight) recorded")
    C.ok(t["img.input"].shape == (30, 16), "odd: multi-axis normalized_shape flattened")
    for m, kind, eps in (("shared", "layernorm", 1e-5), ("t5", "rmsnorm", 1e-6),
                         ("gem", "rmsnorm", 1e-6), ("my", "rmsnorm", 1e-5),
                         ("img", "layernorm", 1e-5)):
        y = recompute(t[f"{m}.input"], kind, eps, t.get(f"{m}.weight"), t.get(f"{m}.bias"))
        C.ok(np.abs(y - t[f"{m}.output"]).max() < 1e-5, f"odd {m}: output recomputed")
    with open(os.path.join(tmp, "odd.json")) as f:
        kinds = [L["norm"] for L in json.load(f)["layers"]]
    C.ok(kinds == ["layernorm", "rmsnorm", "rmsnorm", "rmsnorm", "layernorm"], "odd: config kinds")
    dump("--model", f"{path}:odd", "-o", os.path.join(tmp, "odd2.safetensors"),
         "--norm-kind", "^my$=layernorm", "--match", "^(my|t5)$", "--config", "none")
    _, _, m2 = read_safetensors(os.path.join(tmp, "odd2.safetensors"))
    C.ok(json.loads(m2["modules"]) == ["t5", "my"] and m2["my.norm"] == "layernorm",
         "--match selects, --norm-kind overrides (no switch)")


def example_x(tmp):
    import torch
    g = torch.Generator().manual_seed(1)
    return (torch.randn(3, 10, 16, generator=g) * 3).reshape(30, 16).double().numpy()


def vit(tmp):
    ptl = os.path.join(MODELS, "vit4mnist.ptl")
    if not os.path.isfile(ptl):
        C.ok(False, f"{ptl} missing (data/models ships it)")
        return
    out = os.path.join(tmp, "vit.safetensors")
    dump("--checkpoint", ptl, "--inputs", f"{EXAMPLE}:digit_images", "--inputs-args",
         '{"n": 20}', "-o", out)
    mods = [f"ln{k:02d}" for k in range(12)]
    t, _, _ = check_dump(out, mods, "layernorm", 1e-5, 340, 64, False)
    for p in ("ln00", "ln05", "ln11"):
        ref = os.path.join(TOP, "data", "vit4mnist", f"{p}_weight.npy")
        if os.path.isfile(ref):
            C.ok(np.array_equal(np.load(ref).astype(np.float64), t[f"{p}.weight"]),
                 f"vit4mnist {p}: the weight of data/vit4mnist's {p}")
    check_report(os.path.join(tmp, "vit.json"), mods, "layernorm", 1e-5, False, label="vit4mnist")


def stories(tmp):
    binf = os.path.join(MODELS, "stories260K.bin")
    if not os.path.isfile(binf):
        C.ok(False, f"{binf} missing (data/models ships it)")
        return
    out = os.path.join(tmp, "stories.safetensors")
    dump("--model", f"{LLAMA2C}:load", "--checkpoint", binf, "--inputs-args",
         '{"batch": 2, "length": 24}', "--grad", "--loss", f"{LLAMA2C}:next_token_loss", "-o", out)
    mods = [f"layers.{i}.{n}" for i in range(5) for n in ("attention_norm", "ffn_norm")] + ["norm"]
    t, meta, _ = check_dump(out, mods, "rmsnorm", 1e-5, 48, 64, True)
    C.ok(meta.get("norm.class") == "RMSNorm" and meta.get("norm.eps_source") == "eps",
         "stories260K: class and eps from the module")
    check_report(os.path.join(tmp, "stories.json"), mods, "rmsnorm", 1e-5, True,
                 label="stories260K")
    # the loader against llama2.c's run.c algorithm (one token at a time with a
    # KV cache), written out in NumPy from the file's bytes: the first norm's
    # input is the token embedding, the final norm's input the residual stream
    with open(binf, "rb") as f:
        raw = f.read()
    dim, hid, nl, nh, nkv, vocab, seq = struct.unpack("<7i", raw[:28])
    w = np.frombuffer(raw, "<f4", offset=28).astype(np.float64)
    hs, kvd = dim // nh, nkv * dim // nh
    pos = [0]

    def take(*shape):
        n = int(np.prod(shape))
        a = w[pos[0]:pos[0] + n].reshape(shape)
        pos[0] += n
        return a
    emb = take(abs(vocab), dim)
    att_n, wq, wk = take(nl, dim), take(nl, dim, dim), take(nl, kvd, dim)
    wv, wo, ffn_n = take(nl, kvd, dim), take(nl, dim, dim), take(nl, dim)
    w1, w2, w3 = take(nl, hid, dim), take(nl, dim, hid), take(nl, hid, dim)
    # the token ids: argmax of emb . (normalised first-norm input) recovers them
    x0 = t["layers.0.attention_norm.input"][:8]
    toks = [int(np.argmin(np.abs(emb - r).sum(1))) for r in x0]
    C.ok(np.allclose(emb[toks], x0, atol=0), "stories260K: first norm input = token embeddings")
    kc = np.zeros((nl, 8, kvd))
    vc = np.zeros((nl, 8, kvd))
    final = []
    for p, tok in enumerate(toks):
        x = emb[tok].copy()
        for L in range(nl):
            xb = rmsnorm(x[None], 1e-5)[0][0] * att_n[L]
            q, k, v = wq[L] @ xb, wk[L] @ xb, wv[L] @ xb
            for i in range(0, dim, 2):
                ang = p / 10000.0 ** ((i % hs) / hs)
                c, s = np.cos(ang), np.sin(ang)
                for vec in ((q, k) if i < kvd else (q,)):
                    vec[i], vec[i + 1] = vec[i] * c - vec[i + 1] * s, vec[i] * s + vec[i + 1] * c
            kc[L, p], vc[L, p] = k, v
            o = np.zeros(dim)
            for h in range(nh):
                kh = (h // (nh // nkv)) * hs
                sc = kc[L, :p + 1, kh:kh + hs] @ q[h * hs:(h + 1) * hs] / np.sqrt(hs)
                a = np.exp(sc - sc.max())
                o[h * hs:(h + 1) * hs] = (a / a.sum()) @ vc[L, :p + 1, kh:kh + hs]
            x = x + wo[L] @ o
            xb = rmsnorm(x[None], 1e-5)[0][0] * ffn_n[L]
            h1 = w1[L] @ xb
            x = x + w2[L] @ (h1 / (1 + np.exp(-h1)) * (w3[L] @ xb))
        final.append(x)
    diff = float(np.abs(np.array(final) - t["norm.input"][:8]).max())
    C.ok(diff < 1e-4, f"stories260K: final norm input = run.c-style forward ({diff:.3g})")


def errors(tmp):
    out = os.path.join(tmp, "bad.safetensors")
    for args, what in ((["--model", "no_such_module_xyz:f"], "unimportable model"),
                       (["--model", f"{EXAMPLE}:tiny_layernorm", "--match", "^nothing$"],
                        "no matching module"),
                       (["--model", f"{EXAMPLE}:tiny_layernorm", "--model-args", "{x"],
                        "bad --model-args"),
                       (["--model", f"{EXAMPLE}:tiny_layernorm", "--dtype", "f64"], "bad dtype")):
        p = dump(*args, "-o", out, expect=2)
        C.ok(len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("dump_activations.py: "),
             f"{what}: one line on stderr: {p.stderr!r}")
        C.ok(not os.path.exists(out), f"{what}: nothing written")
    p = subprocess.run([PY, DUMP, "--help"], capture_output=True, text=True)
    C.ok(p.returncode == 0 and "--checkpoint" in p.stdout and not p.stderr, "--help")


def main():
    torch = C.torch()
    with tempfile.TemporaryDirectory() as tmp:
        tiny(tmp, torch)
        tiny_rms(tmp)
        odd(tmp)
        vit(tmp)
        stories(tmp)
        errors(tmp)
    C.done()


if __name__ == "__main__":
    main()
