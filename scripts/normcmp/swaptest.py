"""@SWAPNAME@ - the swap test: replace a model's norm layers by the DyT or
DyISRU drop-ins normcmp fitted, and measure what the model's loss does.

Reads normcmp's output folder RESULTS: report.json (the layers, their role
and depth) and the drop-in parameters beside it,

    dropin_dyt.safetensors         M.alpha [1], M.weight [d], M.bias [d]:
                                   tanh(alpha x) * weight + bias, alpha fitted
    dropin_dyt_alpha0.safetensors  the same with alpha fixed at the DyT
                                   paper's alpha0, weight and bias refitted
    dropin_dyisru.safetensors      M.C [1], M.weight, M.bias:
                                   weight * x / sqrt(x^2 + C) + bias

(any of them; each reproduces the layer's output including its affine
part), builds the same model and inputs as the dump did (the same --model,
--checkpoint, --inputs options), and measures the model's loss (--loss, or
the cross-entropy against --labels; with labels also the accuracy) for: the
original model; each norm replaced alone; the norms of each role replaced
together; all of them replaced; for each surrogate. Every number is the mean
over batches of the inputs (--batch-size examples each, default 1: one
sequence or image), and every change is paired: the mean over batches of
(swapped loss - original loss) with its standard error
sd(differences) / sqrt(batches).

How a norm is replaced: in a PyTorch module, the module at the layer's name
is swapped for a DyT / DyISRU module holding the drop-in parameters (and
put back afterwards); in a TorchScript model (which cannot take module
replacement), each aten::layer_norm node of the inlined forward graph that
the dump named after the layer is rewritten into the surrogate's operations
on the same input, and the rewritten graph is run. Both compute in float32
(the result cast back to the input's dtype).

Writes a JSON file (docs/swap.md defines every field): by default beside
the dump named in report.json (OUT.safetensors -> OUT.swap.json, a folder
DIR -> DIR.swap.json), else RESULTS/swap.json; -o names another.

@OUTPUTS@

@PATTERNS@

Examples (@WHERE@):

    @DUMP@ --model @HELPERS@/llama2c_model.py:load \\
        --checkpoint @MODELS@/stories260K.bin -o out/stories.safetensors
    @NC@ run out/stories.json --out out/stories
    @SWAP@ out/stories --model @HELPERS@/llama2c_model.py:load \\
        --checkpoint @MODELS@/stories260K.bin \\
        --loss @HELPERS@/llama2c_model.py:next_token_loss   # -> out/stories.swap.json

    @DUMP@ --checkpoint @MODELS@/vit4mnist.ptl \\
        --inputs @HELPERS@/example_model.py:digit_images -o out/vit.safetensors
    @NC@ run out/vit.json --out out/vit
    @SWAP@ out/vit --checkpoint @MODELS@/vit4mnist.ptl \\
        --inputs @HELPERS@/example_model.py:digit_images \\
        --labels @HELPERS@/example_model.py:digit_labels    # -> out/vit.swap.json

Progress on stderr when it is a terminal (-q: nothing but errors).

Exit status: 0 written; 2 bad arguments or a bad RESULTS folder (one line
naming the file, the field and what was expected), an unimportable model,
inputs or loss, a layer the model does not have; 1 the model failed to run
or the output could not be written (nothing is left half-written).
"""
import argparse
import hashlib
import json
import math
import os
import shlex
import sys
import time

from . import outputs, safetensors
from .common import Fail, Log, accepts, fmt_kw, import_torch, load_callable, one_line
from .dump import Parser, graph_layer_norms, help_text
from .loading import add_model_args, build_inputs, build_model, check_model_args, compute_loss
from .loading import callable_name, json_object, model_output_tensor
from .namematch import compile_pattern

TOOL = "normcmp scripts/swap_test.py 1"
FORMAT = "normcmp swap test"
VERSION = 1
SURROGATES = ("dyt", "dyt_alpha0", "dyisru")
PARAMS = {"dyt": ("alpha", "weight", "bias"), "dyt_alpha0": ("alpha", "weight", "bias"),
          "dyisru": ("C", "weight", "bias")}
DROPIN_FORMAT = "normcmp-dropin 1"
REPORT_MAX = 1 << 30  # the largest report.json read (the binary's bound for a shard report)


# ------------------------------------------------------------------ arguments

def parse_args(argv, prog="swap_test.py", need_model=True):
    doc = help_text(__doc__, prog)
    p = Parser(prog=prog, description=doc.split("\n\n")[0],
               epilog="\n\n".join(doc.split("\n\n")[1:]),
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", metavar="RESULTS",
                   help="normcmp's output folder: report.json and dropin_*.safetensors")
    add_model_args(p)
    g = p.add_argument_group("loss")
    g.add_argument("--loss", metavar="MODULE:CALLABLE",
                   help="loss(output, inputs) -> scalar tensor, the mean over the batch given "
                        "(labels= too when it names that parameter); default with --labels: "
                        "the cross-entropy of the output against them")
    g.add_argument("--loss-unit", metavar="TEXT",
                   help="the loss's unit for the results (default: the callable's `unit` "
                        "attribute, 'nats per example' for the cross-entropy)")
    g.add_argument("--labels", metavar="MODULE:CALLABLE",
                   help="class ids [examples] of the inputs: the accuracy is measured too")
    g.add_argument("--labels-args", metavar="JSON", default="{}",
                   help="keyword arguments of the labels callable (it also receives those of "
                        "--inputs-args it names)")
    g.add_argument("--batch-size", type=int, default=1, metavar="K",
                   help="examples per batch (the first axis of every input tensor; default 1): "
                        "the loss is measured per batch, the standard errors are over batches")
    g = p.add_argument_group("what to replace")
    g.add_argument("--surrogate", metavar="LIST",
                   help=f"comma-separated, of {', '.join(SURROGATES)} (default: every one whose "
                        "dropin file is in RESULTS)")
    g.add_argument("--match", metavar="REGEX",
                   help="only the layers whose name matches, searched anywhere in it (a name "
                        "pattern: see NAME PATTERNS below)")
    g = p.add_argument_group("output")
    g.add_argument("-o", "--out", metavar="FILE.json", help="where to write (see above)")
    g.add_argument("-q", "--quiet", action="store_true", help="nothing on stderr but errors")
    g.add_argument("-v", "--verbose", action="store_true", help="notes on stderr")
    a = p.parse_args(argv)
    if need_model:
        check_model_args(a)
    json_object(a, "labels_args")
    if a.batch_size < 1:
        raise Fail("--batch-size: expected a number >= 1")
    if need_model and not a.loss and not a.labels:
        raise Fail("give --loss MODULE:CALLABLE or --labels MODULE:CALLABLE (the swap test "
                   "measures the model's own loss; without labels there is no default)")
    if a.surrogate is not None:
        a.surrogate = [s.strip() for s in a.surrogate.split(",") if s.strip()]
        bad = [s for s in a.surrogate if s not in SURROGATES]
        if bad or not a.surrogate:
            raise Fail(f"--surrogate: {', '.join(bad) or 'nothing'}: expected a list of "
                       f"{', '.join(SURROGATES)}")
    if a.match is not None:
        a.match = compile_pattern(a.match, "--match")
    return a


# ------------------------------------------------------------------ reading RESULTS

def read_report(folder):
    """[{name, role, depth, order}] in report order, and the dump it came
    from (a file or folder path) or None when several or none."""
    path = os.path.join(folder, "report.json")
    if not os.path.isdir(folder):
        raise Fail(f"{folder}: not a folder (expected normcmp's output folder, with report.json)")
    rep = outputs.read_json(path, REPORT_MAX, "normcmp's report.json")
    layers = rep.get("layers") if isinstance(rep, dict) else None
    if not isinstance(layers, list) or not layers:
        raise Fail(f"{path}: layers: expected a non-empty list of layers")
    out = []
    for k, L in enumerate(layers):
        if not isinstance(L, dict) or not isinstance(L.get("name"), str) or not L["name"]:
            raise Fail(f"{path}: layers[{k}].name: expected a string")
        role = L.get("role")
        depth = L.get("depth")
        out.append({"name": L["name"], "role": role if isinstance(role, str) else None,
                    "depth": depth if isinstance(depth, int) and not isinstance(depth, bool)
                    else None, "order": k})
    files = set()
    cfg = rep.get("config")
    cfg_layers = cfg.get("layers") if isinstance(cfg, dict) else None
    for L in (cfg_layers if isinstance(cfg_layers, list) else []):
        if isinstance(L, dict) and isinstance(L.get("file"), str) and L["file"]:
            files.add(L["file"])
    dump = None
    if len(files) == 1:
        f = files.pop()
        dump = os.path.dirname(f) if os.path.basename(f) == "model.safetensors.index.json" else f
    return out, dump


def read_dropins(folder, wanted, np):
    """{surrogate: {"file", "sha256", "params": {layer: {alpha|C, weight,
    bias}}, "meta": {...}}} for the surrogates asked for (all present ones by
    default)."""
    out = {}
    for s in wanted or SURROGATES:
        path = os.path.join(folder, f"dropin_{s}.safetensors")
        if not os.path.lexists(path):  # anything else there is read, and refused if not a file
            if wanted:
                raise Fail(f"--surrogate {s}: {path}: no such file (normcmp writes the drop-in "
                           "parameters beside report.json)")
            continue
        tensors, meta = safetensors.read(path, np)
        if meta.get("format") != DROPIN_FORMAT:
            raise Fail(f"{path}: __metadata__.format: {meta.get('format')!r}, expected "
                       f"{DROPIN_FORMAT!r}")
        if meta.get("surrogate", s) != s:
            raise Fail(f"{path}: __metadata__.surrogate: {meta['surrogate']!r}, expected {s!r}")
        out[s] = {"file": path, "sha256": sha256(path), "meta": meta,
                  "params": layer_params(path, s, tensors, np)}
    if not out:
        raise Fail(f"{folder}: no dropin_*.safetensors (expected "
                   f"{', '.join(f'dropin_{s}.safetensors' for s in SURROGATES)} beside "
                   "report.json, as normcmp writes them)")
    return out


def layer_params(path, s, tensors, np):
    """{layer: {param: array}}, every layer with all of PARAMS[s], checked."""
    scal, vec1, vec2 = PARAMS[s]
    layers = {}
    for name in tensors:
        mod, _, p = name.rpartition(".")
        if p not in PARAMS[s]:
            raise Fail(f"{path}: {name}: unexpected tensor (expected {mod}.{scal}, .{vec1}, "
                       f".{vec2})")
        layers.setdefault(mod, {})[p] = tensors[name]
    for mod, ps in layers.items():
        for p in PARAMS[s]:
            if p not in ps:
                raise Fail(f"{path}: {mod}.{p}: missing (expected {mod}.{scal}, .{vec1}, .{vec2})")
        if ps[scal].shape != (1,):
            raise Fail(f"{path}: {mod}.{scal}: shape {list(ps[scal].shape)}, expected [1]")
        d = ps[vec1].shape
        if len(d) != 1 or ps[vec2].shape != d:
            raise Fail(f"{path}: {mod}.{vec1} / .{vec2}: shapes {list(d)} / "
                       f"{list(ps[vec2].shape)}, expected [d] and [d]")
        for p, v in ps.items():
            if not np.isfinite(v).all():
                raise Fail(f"{path}: {mod}.{p}: not finite")
        if scal == "C" and not ps["C"][0] > 0:
            raise Fail(f"{path}: {mod}.C: {ps['C'][0]:g}, expected > 0")
    return layers


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ------------------------------------------------------------------ surrogates

def surrogate_module(kind, ps, torch):
    """A torch module computing the drop-in (float32, the result in the
    input's dtype): DyT tanh(alpha x) * weight + bias, with the layout of
    the DyT paper's DynamicTanh (alpha [1], weight [d], bias [d]); DyISRU
    weight * x / sqrt(x^2 + C) + bias."""
    nn = torch.nn

    class DyT(nn.Module):
        def __init__(self, alpha, weight, bias):
            super().__init__()
            self.alpha = nn.Parameter(torch.tensor(alpha, dtype=torch.float32))
            self.weight = nn.Parameter(torch.tensor(weight, dtype=torch.float32))
            self.bias = nn.Parameter(torch.tensor(bias, dtype=torch.float32))

        def forward(self, x):
            return (torch.tanh(self.alpha * x.float()) * self.weight + self.bias).to(x.dtype)

    class DyISRU(nn.Module):
        def __init__(self, C, weight, bias):
            super().__init__()
            self.C = nn.Parameter(torch.tensor(C, dtype=torch.float32))
            self.weight = nn.Parameter(torch.tensor(weight, dtype=torch.float32))
            self.bias = nn.Parameter(torch.tensor(bias, dtype=torch.float32))

        def forward(self, x):
            xf = x.float()
            return (self.weight * (xf * torch.rsqrt(xf * xf + self.C)) + self.bias).to(x.dtype)

    if kind == "dyisru":
        return DyISRU(ps["C"], ps["weight"], ps["bias"])
    return DyT(ps["alpha"], ps["weight"], ps["bias"])


class Replaced:
    """Context: the modules named in `swaps` ({name: module}) stand in for
    the model's own while inside; the originals are put back after."""

    def __init__(self, model, swaps):
        self.model, self.swaps, self.saved = model, swaps, []

    def __enter__(self):
        # the deepest first: a norm inside a norm (a.input in a) is reached
        # through its parent before the parent itself is replaced
        for name, new in sorted(self.swaps.items(), key=lambda kv: -kv[0].count(".")):
            parent_name, _, attr = name.rpartition(".")
            parent = self.model.get_submodule(parent_name) if parent_name else self.model
            old = getattr(parent, attr)
            dev = next((t.device for t in list(old.parameters()) + list(old.buffers())), None)
            if dev is not None:
                new.to(dev)  # the norm's device (the model's, or its shard's)
            self.saved.append((parent, attr, old))
            setattr(parent, attr, new)
        return self

    def __exit__(self, *exc):
        for parent, attr, old in reversed(self.saved):
            setattr(parent, attr, old)
        return False


def rewrite_graph(sm, swaps, torch, log):
    """A function running the scripted model `sm` with the aten::layer_norm
    nodes of each layer in `swaps` ({name: (kind, params)}) rewritten into
    the surrogate's operations (float32, cast back to the input's dtype)."""
    g, layers = graph_layer_norms(sm, None, log)
    for name, n, ins, _ in layers:
        if name not in swaps:
            continue
        kind, ps = swaps[name]
        x = ins[0]
        g.setInsertPoint(n)

        def op(kind_, *vals):
            nd = g.create(kind_, list(vals))
            g.insertNode(nd)
            nd.output().setType(torch._C.TensorType.get())
            return nd.output()

        const = lambda v: g.insertConstant(torch.tensor(v, dtype=torch.float32))  # noqa: E731
        one = g.insertConstant(1)
        f32 = g.insertConstant(torch.float32)
        false = g.insertConstant(False)
        none = g.insertConstant(None)
        xf = op("aten::to", x, f32, false, false, none)
        if kind == "dyisru":
            s = op("aten::rsqrt", op("aten::add", op("aten::mul", xf, xf), const(ps["C"]), one))
            y = op("aten::mul", const(ps["weight"]), op("aten::mul", xf, s))
        else:
            y = op("aten::mul", op("aten::tanh", op("aten::mul", const(ps["alpha"]), xf)),
                   const(ps["weight"]))
        y = op("aten::add", y, const(ps["bias"]), one)
        y = op("aten::type_as", y, x)
        n.output().replaceAllUsesWith(y)
        n.destroy()
    fn = torch._C._create_function_from_graph("normcmp_swap_forward", g)
    return lambda *args: fn(sm._c, *args)


# ------------------------------------------------------------------ measuring

def split_batches(args, kwargs, labels, k, torch):
    """[(args, kwargs, labels)] of k examples each along the first axis of
    every input tensor (the last batch may be smaller)."""
    tensors = [v for v in list(args) + list(kwargs.values()) if isinstance(v, torch.Tensor)]
    if not tensors:
        raise Fail("inputs: no tensor to split into batches")
    n = tensors[0].shape[0] if tensors[0].dim() else 0
    sizes = sorted({int(t.shape[0]) if t.dim() else -1 for t in tensors})
    if sizes != [n] or n < 1:
        raise Fail(f"inputs: the tensors' first axes {sizes} differ; the swap test splits every "
                   "input tensor into batches along its first axis")
    if labels is not None and (labels.dim() != 1 or labels.shape[0] != n):
        raise Fail(f"--labels: shape {list(labels.shape)}, expected [{n}] (one class id per "
                   "example)")
    cut = lambda v, s: v[s] if isinstance(v, torch.Tensor) else v  # noqa: E731
    out = []
    for i in range(0, n, k):
        s = slice(i, min(i + k, n))
        out.append((tuple(cut(v, s) for v in args), {key: cut(v, s) for key, v in kwargs.items()},
                    None if labels is None else labels[s]))
    return out


class Measure:
    """Runs the model on every batch, with or without replacements, and
    returns the per-batch loss and accuracy (float64 NumPy arrays)."""

    def __init__(self, a, model, scripted, batches, log, torch, np):
        self.a, self.model, self.scripted = a, model, scripted
        self.batches, self.log, self.torch, self.np = batches, log, torch, np
        self.has_labels = batches[0][2] is not None

    def loss(self, out, args, kwargs, labels):
        torch = self.torch
        if self.a.loss:
            return compute_loss(self.a.loss, out, args, kwargs, torch, need_grad=False,
                                extra={"labels": labels} if labels is not None else None)
        y = model_output_tensor(out, torch).float()
        if y.dim() != 2 or y.shape[0] != labels.shape[0]:
            raise Fail(f"--labels: the model's output has shape {list(y.shape)}, expected "
                       f"[{labels.shape[0]}, classes] for the cross-entropy (give --loss)", 1)
        return torch.nn.functional.cross_entropy(y, labels.long())

    def accuracy(self, out, labels):
        y = model_output_tensor(out, self.torch)
        if y.dim() != 2 or y.shape[0] != labels.shape[0]:
            return float("nan")
        return float((y.argmax(-1) == labels).double().mean())

    def run(self, swaps):
        """swaps: {layer: (kind, params)}; {} for the original model."""
        torch, np = self.torch, self.np
        losses, accs = [], []
        if self.scripted:
            fwd = rewrite_graph(self.model, swaps, torch, self.log) if swaps else self.model
            ctx = Replaced(torch.nn.Module(), {})
        else:
            fwd = self.model
            ctx = Replaced(self.model, {name: surrogate_module(kind, ps, torch)
                                        for name, (kind, ps) in swaps.items()})
        try:
            with ctx, torch.no_grad():
                for args, kwargs, labels in self.batches:
                    out = fwd(*args, **kwargs)
                    losses.append(float(self.loss(out, args, kwargs, labels)))
                    if labels is not None:
                        accs.append(self.accuracy(out, labels))
        except Fail:
            raise
        except Exception as e:  # noqa: BLE001
            raise Fail(f"the model failed: {type(e).__name__}: {one_line(e)}", 1)
        return np.array(losses, np.float64), np.array(accs, np.float64) if accs else None


def stats(base, new, np):
    """The mean of `new` over batches and its paired change against `base`
    (mean of the differences, its standard error sd / sqrt(B), sd with
    B - 1), or nulls and a status when a batch gave a non-finite value."""
    B = len(new)
    bad = int((~np.isfinite(new)).sum())
    if bad:
        return {"mean": None, "se": None, "delta": None, "delta_se": None,
                "status": f"non-finite in {bad} of {B} batches"}
    d = new - base
    se = lambda v: float(v.std(ddof=1) / math.sqrt(B)) if B > 1 else None  # noqa: E731
    return {"mean": float(new.mean()), "se": se(new), "delta": float(d.mean()),
            "delta_se": se(d), "status": "ok" if B > 1 else "one batch: no standard error"}


def entry(m, base, swaps, np):
    """One configuration's results: loss, its change and standard error,
    and with labels the accuracy and its change."""
    loss, acc = m.run(swaps)
    s = stats(base[0], loss, np)
    e = {"loss": s["mean"], "loss_se": s["se"], "delta": s["delta"], "delta_se": s["delta_se"]}
    if acc is not None:
        t = stats(base[1], acc, np)
        e.update({"accuracy": t["mean"], "accuracy_se": t["se"], "accuracy_delta": t["delta"],
                  "accuracy_delta_se": t["delta_se"]})
    e["status"] = s["status"]
    return e


# ------------------------------------------------------------------ the test

def build_labels(a, model, torch):
    """The class ids of --labels (a 1-D integer tensor), or None."""
    if not a.labels:
        return None
    fn, _ = load_callable(a.labels, "labels")
    kw = {k: v for k, v in a.inputs_args.items() if accepts(fn, k)}
    kw.update(a.labels_args)
    if accepts(fn, "model") and "model" not in kw:
        kw["model"] = model
    try:
        y = fn(**kw)
    except Exception as e:  # noqa: BLE001
        raise Fail(f"--labels: {a.labels}({fmt_kw(kw)}) failed: {type(e).__name__}: "
                   f"{one_line(e)}")
    y = torch.as_tensor(y)
    if y.is_floating_point() or y.dtype == torch.bool:
        raise Fail(f"--labels: {a.labels} returned {y.dtype}, expected integer class ids")
    return y.to(a.device)


def pick_layers(a, layers, dropins, model, scripted, log):
    """The report's layers (within --match) that have drop-in parameters,
    with role and depth (from report.json, else the drop-in metadata, else
    none / the report order); fails on a layer the model does not have."""
    if scripted:
        _, found = graph_layer_norms(model, None, log)
        names = {t[0] for t in found}
    else:
        names = {n for n, _ in model.named_modules()}
    out = []
    for L in layers:
        if a.match is not None and not a.match.search(L["name"]):
            continue
        have = [s for s in dropins if L["name"] in dropins[s]["params"]]
        if not have:
            log.note(f"{L['name']}: no drop-in parameters; left out")
            continue
        if L["name"] not in names:
            what = "aten::layer_norm layers" if scripted else "modules"
            raise Fail(f"{L['name']}: in report.json but not among the model's {what} (is it "
                       "the model and the options the dump ran?)")
        role = L["role"]
        for s in have:
            role = role or dropins[s]["meta"].get(f"{L['name']}.role")
        out.append({"name": L["name"], "role": role, "depth": L["depth"], "order": L["order"],
                    "surrogates": have})
    if not out:
        raise Fail("no layer of report.json has drop-in parameters"
                   + (f" and matches --match {a.match.pattern!r}" if a.match else ""))
    return out


def scalar_param(ps, s):
    return {PARAMS[s][0]: float(ps[PARAMS[s][0]][0])}


def run_test(a, m, picked, dropins, log, np):
    """The results' measurement blocks: original, layers, roles, all."""
    t0 = time.time()
    base = m.run({})
    ob = {"loss": float(base[0].mean()),
          "loss_se": float(base[0].std(ddof=1) / math.sqrt(len(base[0])))
          if len(base[0]) > 1 else None}
    if base[1] is not None:
        ob["accuracy"] = float(base[1].mean())
        ob["accuracy_se"] = (float(base[1].std(ddof=1) / math.sqrt(len(base[1])))
                             if len(base[1]) > 1 else None)
    if not np.isfinite(base[0]).all():
        raise Fail("the original model's loss is not finite on every batch", 1)
    roles = []
    for L in picked:
        if L["role"] and L["role"] not in roles:
            roles.append(L["role"])
    groups = [("layer", L["name"], [L]) for L in picked]
    groups += [("role", r, [L for L in picked if L["role"] == r]) for r in roles]
    groups.append(("all", None, picked))
    todo = sum(len({s for L in grp for s in L["surrogates"]}) for _, _, grp in groups)
    done = 0
    res = {"layers": [], "roles": [], "all": None}
    for what, label, grp in groups:
        block = {"swap": {}}
        for s in dropins:
            members = [L for L in grp if s in L["surrogates"]]
            if not members:
                continue
            done += 1
            log.progress(f"[{done}/{todo}] {label or 'all layers'}: {s}"
                         + (f" ({len(members)} layers)" if what != "layer" else ""))
            swaps = {L["name"]: (s, dropins[s]["params"][L["name"]]) for L in members}
            e = entry(m, base, swaps, np)
            if what == "layer":
                e = dict(scalar_param(dropins[s]["params"][label], s), **e)
            else:
                e = dict({"layers": len(members)}, **e)
            block["swap"][s] = e
        if what == "layer":
            L = grp[0]
            res["layers"].append(dict({"name": L["name"], "role": L["role"],
                                       "depth": L["depth"] if L["depth"] is not None
                                       else L["order"]}, **block))
        elif what == "role":
            res["roles"].append(dict({"role": label, "layers": [L["name"] for L in grp]},
                                     **block))
        else:
            res["all"] = dict({"layers": [L["name"] for L in grp]}, **block)
    res["original"] = ob
    res["seconds"] = round(time.time() - t0, 3)
    return res


def default_out(a, dump):
    if a.out:
        return a.out
    if dump:
        stem = dump.rstrip("/")
        if stem.endswith(".safetensors"):
            stem = stem[:-len(".safetensors")]
        return stem + ".swap.json"
    return os.path.join(a.results, "swap.json")


def input_files(a):
    """What the test reads (report.json, the drop-in files, --checkpoint,
    the .py files of --model, --inputs, --loss, --labels): the results may
    replace none of them."""
    files = [os.path.join(a.results, "report.json")]
    files += [os.path.join(a.results, f"dropin_{s}.safetensors") for s in SURROGATES]
    files += [a.checkpoint] if a.checkpoint else []
    for spec in (a.model, a.inputs, a.loss, a.labels):
        mod = spec.rpartition(":")[0] if isinstance(spec, str) else ""
        if mod.endswith(".py") or os.sep in mod:
            files.append(mod)
    return files


def plan_output(a, path, log):
    """The results file, checked and locked before the measurements
    (normcmp/outputs.py): (writer, output)."""
    w = outputs.Writer(TOOL, inputs=input_files(a), log=log)
    try:
        return w, w.file(path, "-o")
    except BaseException:
        w.abort()
        raise


def write_json(planned, obj):
    """The results into the planned output: staged, flushed, renamed."""
    w, out = planned
    with w:
        try:
            with outputs.create(out.staged, text=True) as f:
                json.dump(obj, f, indent=1, allow_nan=False)
                f.write("\n")
        except OSError as e:
            raise Fail(f"-o: cannot write {out.shown}: {e.strerror or e}", 1)
        w.commit()


def loss_unit(a):
    if a.loss_unit:
        return a.loss_unit
    if a.loss:
        fn = a.loss if callable(a.loss) else load_callable(a.loss, "loss")[0]
        return getattr(fn, "unit", None) or f"as returned by {callable_name(a.loss)}"
    return "nats per example"


def swap_test(a, model, scripted, args, kwargs, in_desc, log, torch, np, command):
    """The whole test on a built model and inputs; returns (results dict,
    the path it belongs at). Shared by the command line and the notebook
    module (normcmp.swap)."""
    layers, dump = read_report(a.results)
    dropins = read_dropins(a.results, a.surrogate, np)
    return measure(a, model, scripted, args, kwargs, in_desc, layers, dump, dropins, log, torch,
                   np, command)


def measure(a, model, scripted, args, kwargs, in_desc, layers, dump, dropins, log, torch, np,
            command, labels=None):
    """swap_test() once RESULTS is read (main reads it before the model is
    built, so that a bad folder fails fast). labels: class ids given
    directly (the notebook module), else --labels builds them."""
    picked = pick_layers(a, layers, dropins, model, scripted, log)
    if labels is None:
        labels = build_labels(a, model, torch)
    elif not isinstance(labels, torch.Tensor):
        labels = torch.as_tensor(labels)
    batches = split_batches(args, kwargs, labels, a.batch_size, torch)
    m = Measure(a, model, scripted, batches, log, torch, np)
    res = run_test(a, m, picked, dropins, log, np)
    out = {"format": FORMAT, "version": VERSION, "tool": TOOL, "command": command,
           "model": a.model or a.checkpoint or type(model).__name__,
           "checkpoint": a.checkpoint, "inputs": in_desc,
           "labels": a.labels or ("given" if labels is not None else None),
           "torch": torch.__version__,
           "report": os.path.abspath(os.path.join(a.results, "report.json")),
           "dump": os.path.abspath(dump) if dump else None,
           "replace": "TorchScript graph rewrite of aten::layer_norm" if scripted
           else "module replacement",
           "dropin": {s: {"file": os.path.basename(d["file"]), "sha256": d["sha256"]}
                      for s, d in dropins.items()},
           "surrogates": list(dropins),
           "loss": {"name": callable_name(a.loss) if a.loss else "cross-entropy against the "
                    "labels", "unit": loss_unit(a)},
           "examples": sum(int(next(v for v in list(b[0]) + list(b[1].values())
                                    if isinstance(v, torch.Tensor)).shape[0]) for b in batches),
           "batch_size": a.batch_size, "batches": len(batches)}
    out["original"] = res.pop("original")
    out.update(res)
    return out, default_out(a, dump)


def main(argv=None, prog=None, script=None):
    argv = sys.argv[1:] if argv is None else argv
    prog = prog or os.path.basename(sys.argv[0]) or "swap_test.py"
    a = parse_args(argv, prog)
    log = Log(prog, a.quiet, a.verbose)
    layers, dump = read_report(a.results)  # a bad folder fails before torch loads
    try:
        import numpy as np
    except ImportError:
        np = None  # import_torch re-executes or says what to install
    dropins = read_dropins(a.results, a.surrogate, np) if np is not None else None
    torch, np = import_torch(argv, script or sys.argv[0], log)
    planned = plan_output(a, default_out(a, dump), log)  # fails before the model is built
    with planned[0]:
        model, scripted, model_mod = build_model(a, log, torch)
        args, kwargs, in_desc = build_inputs(a, model, model_mod, log, torch)
        command = " ".join(shlex.quote(s) for s in [sys.argv[0]] + list(argv))
        out, path = measure(a, model, scripted, args, kwargs, in_desc, layers, dump, dropins,
                            log, torch, np, command)
        write_json(planned, out)
    o, al = out["original"], out["all"]["swap"]
    parts = [f"{s} {e['delta']:+.4g} +- {e['delta_se']:.2g}" if e["delta"] is not None
             and e["delta_se"] is not None else f"{s} {e['status']}" for s, e in al.items()]
    print(f"wrote {path}: {len(out['layers'])} layers, {out['batches']} batches; loss "
          f"{o['loss']:.4g} {out['loss']['unit']}; all replaced: " + ", ".join(parts))
    return 0
