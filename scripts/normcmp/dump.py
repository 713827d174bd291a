"""@DUMPNAME@ - capture what goes into and comes out of every
LayerNorm / RMSNorm module of a PyTorch model, for normcmp.

Runs the model once on CPU (or --device) with forward hooks on the norm
modules and writes, per hooked module M (its qualified name from
named_modules()):

    M.input        [N, d]  what enters the module (first positional argument)
    M.output       [N, d]  what it returns (after its weight and bias)
    M.weight       [d]     its affine weight, if it has one
    M.bias         [d]     its affine bias, if it has one
    M.grad_output  [N, d]  with --grad: d loss / d M.output

N = tokens: the leading axes flattened (at most --tokens of them, the first
ones), d = the normalised width. Tensors keep the dtype they were captured
in (float32, float16, bfloat16, float64) unless --dtype asks for another.

Where it goes: -o OUT.safetensors writes one file; -o DIR (any name not
ending in .safetensors) writes a folder with one shard per module, named
as Hugging Face names checkpoint shards (DIR/model-00001-of-00065.safetensors,
...) and DIR/model.safetensors.index.json (its "weight_map" names each
tensor's shard). normcmp reads either as it comes: the file, the folder,
the index or a glob of the shards. Memory stays about one layer's tensors
whatever the model's depth: each call's rows are checked and written, in
blocks of 64K elements, to the staging folder beside OUT while the model runs
(gradients to their place as backward reaches them), and the files are
assembled from there at the end (copy_file_range), so the disk briefly holds
up to twice the dump. (A TorchScript model returns all its layer norms'
tensors at once: bounded by the graph, not by this script.)

@OUTPUTS@

__metadata__ records the model, the command, and per module its class, norm
kind, eps, tokens_per_sequence (when every call's input was [B, T, ..., d]
with the same T x ...: the rows of one sequence, which normcmp's token
bootstrap resamples together) and the script's own check that the output equals the norm of the
input with the weight and bias (check_max_abs_diff, on the captured values
before any --dtype rounding); in a folder, every shard carries the run's
keys and its own module's. Next to the dump goes a config for `normcmp run`
(--config; OUT.json, or DIR.json beside the folder) with one layer per
module, each with its own norm kind and eps, its tensor named exactly
(the glob characters * ? [ \\ escaped with a backslash).

Which modules: those whose class name matches one of the default classes
(LayerNorm, RMSNorm, the Hugging Face RMSNorm and T5LayerNorm classes, and
any class ending in RMSNorm or LayerNorm); --class PATTERN adds a class
glob to them, --only-class PATTERN replaces them. Modules whose class name
says "norm" but that match none (a custom ScaleNorm, say) are listed in
one warning with the --class option that would take them (not with
--only-class, nor outside --match); torch's batch,
group, instance and local-response norms, and modules holding other
modules (pre-norm wrappers), are not.

@PATTERNS@

Progress: one line per module as it is captured, and per tensor as it is
written, on stderr when stderr is a terminal (nothing otherwise; -q for
none at all, not even warnings; -v for notes such as the interpreter used).

Interpreter: PyTorch and NumPy are needed. Started under a python3 that
lacks them (e.g. a pyenv or venv python3 first on PATH), the script
re-executes itself under $NORMCMP_TORCH_PYTHON (default /usr/bin/python3,
Debian's, which has them once python3-torch is installed) if that one has
them (said with -v); otherwise it fails saying what to install: on Debian/Ubuntu
`sudo apt-get install python3-torch python3-numpy` (scripts/deps.sh test
installs them with the rest of the test dependencies), elsewhere
`python3 -m pip install torch numpy`.

Models: --model MODULE:CALLABLE (a dotted module on sys.path, or a path to a
.py file; a bare file name is also looked up among the helper modules in
@HELPERS@) builds the model, with keyword arguments from --model-args JSON.
--checkpoint PATH then loads weights: passed as checkpoint= to the callable
when it has that parameter (custom formats, e.g. llama2c_model.py),
otherwise torch.load'ed as a state_dict (or a dict holding one under
"state_dict"/"model") or a whole pickled module. A TorchScript file (.pt,
.ptl, ... saved with torch.jit.save) is the model by itself (no --model):
hooks cannot be registered on scripted modules, so the script instead adds
every aten::layer_norm of the inlined forward graph to the graph's outputs
and runs that; those layers are named after their weight's attribute path
(e.g. blocks.0.ln1) or ln00, ln01, ... when the weights are constants (a
traced or frozen model). RMSNorm written as plain tensor ops cannot be
found in a graph, and layer norms inside loops are not captured.

Inputs: --inputs MODULE:CALLABLE (with --inputs-args JSON; it receives the
model as model= when it has that parameter) returning a tensor (one
positional input), a tuple/list (positional inputs) or a dict (keyword
inputs). Without it: --input-shape (seeded normal floats, or token ids below
--input-vocab), else the model's example_inputs() method, else an
example_inputs(model) function in the --model module.

Examples (@WHERE@):

    @DUMP@ --model @HELPERS@/example_model.py:tiny_layernorm \\
        -o out/tiny.safetensors --grad
    @DUMP@ --model @HELPERS@/example_model.py:tiny_rmsnorm \\
        -o out/tiny_rms/               # a folder of shards + out/tiny_rms.json
    @DUMP@ --model @HELPERS@/llama2c_model.py:load \\
        --checkpoint @MODELS@/stories260K.bin -o out/stories.safetensors
    @DUMP@ --checkpoint @MODELS@/vit4mnist.ptl \\
        --inputs @HELPERS@/example_model.py:digit_images -o out/vit4mnist.safetensors
    @NC@ run out/tiny.json --out out/tiny-report
    @NC@ fit out/tiny_rms/    # or out/tiny_rms/model.safetensors.index.json

Exit status: 0 written; 2 bad arguments, an unimportable model or inputs, no
matching module, an output that is not the script's to replace (see
OUTPUTS), or no PyTorch (one line on stderr); 1 the model failed to run,
the output is in use by another run or could not be written (nothing is
left half-written); 130 ^C, 143 SIGTERM (the earlier output kept whole).
"""
import argparse
import fnmatch
import io
import json
import math
import os
import shlex
import struct
import sys
import time

from . import outputs
from .common import Fail, Log, import_torch, one_line, shown_paths
from .namematch import compile_pattern
from .loading import add_model_args, build_inputs, build_model, check_model_args, compute_loss

TOOL = "normcmp scripts/dump_activations.py 2"
INDEX_NAME = "model.safetensors.index.json"

DEFAULT_CLASSES = ["LayerNorm", "RMSNorm", "LlamaRMSNorm", "MistralRMSNorm", "MixtralRMSNorm",
                   "Qwen2RMSNorm", "Qwen3RMSNorm", "GemmaRMSNorm", "Gemma2RMSNorm", "Phi3RMSNorm",
                   "T5LayerNorm", "MT5LayerNorm", "UMT5LayerNorm", "LongT5LayerNorm",
                   "FusedRMSNorm", "MixedFusedRMSNorm", "FusedLayerNorm", "MixedFusedLayerNorm",
                   "*RMSNorm", "*LayerNorm"]
# classes without "RMS" in their name that are nevertheless RMSNorms
KNOWN_RMS = {"T5LayerNorm", "MT5LayerNorm", "UMT5LayerNorm", "LongT5LayerNorm",
             "Pix2StructLayerNorm"}
KINDS = ("layernorm", "rmsnorm")
EPS_ATTRS = ("eps", "variance_epsilon", "epsilon", "norm_eps")
WEIGHT_ATTRS = ("weight", "gamma", "scale", "g")
BIAS_ATTRS = ("bias", "beta", "shift", "b")


PATTERNS_HELP = """NAME PATTERNS (--match, --norm-kind): a subset of Python's regular
expressions, matched in time linear in the pattern and the name whoever
wrote it: literal characters and escaped punctuation (\\.), ., classes
[a-z_] [^0-9], \\d \\w \\s \\D \\W \\S, groups ( ) (?: ), alternatives |,
* + ? {m} {m,} {m,n} (bounds at most 1000), ^ and $; searched anywhere in
the name unless anchored. Back-references, look-around, \\b and other
escaped letters, inline flags and named groups are refused, as is a
pattern over 1000 characters or expanding to over 2000 automaton states."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Fail(f"{message} (see --help)")


# ------------------------------------------------------------------ arguments

def help_text(doc, prog):
    """doc with its placeholders filled for the way the script was started:
    from the source tree (paths relative to the project root, `python3
    scripts/...`, build/normcmp) or installed (the installed folders, the
    installed command names)."""
    sp = shown_paths()
    installed = sp["helpers"] != "scripts"
    subs = {"@DUMPNAME@": prog, "@SWAPNAME@": prog,
            "@HELPERS@": sp["helpers"], "@MODELS@": sp["models"],
            "@DUMP@": "normcmp-dump" if installed else "python3 scripts/dump_activations.py",
            "@SWAP@": "normcmp-swap" if installed else "python3 scripts/swap_test.py",
            "@NC@": "normcmp" if installed else "build/normcmp",
            "@WHERE@": "installed: the helper modules and models are in " + sp["helpers"]
                       if installed else "from the project root",
            "@OUTPUTS@": outputs.HELP, "@PATTERNS@": PATTERNS_HELP}
    for k, v in subs.items():
        doc = doc.replace(k, v)
    return doc


def parse_args(argv, prog="dump_activations.py", need_model=True):
    """The options as a namespace, checked and converted. need_model=False:
    the caller supplies the model and inputs itself (the notebook module)."""
    doc = help_text(__doc__, prog)
    p = Parser(prog=prog, description=doc.split("\n\n")[0],
               epilog="\n\n".join(doc.split("\n\n")[1:]),
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--out", required=True, metavar="OUT.safetensors|DIR",
                   help="a name ending in .safetensors: one file; anything else: a folder "
                        "of shards, one per module, with model.safetensors.index.json "
                        "(missing folders are created)")
    add_model_args(p)
    g = p.add_argument_group("which modules")
    g.add_argument("--class", dest="classes", action="append", default=[], metavar="PATTERN",
                   help="also hook modules whose class name matches this glob (repeatable; "
                        "added to the default classes: LayerNorm, RMSNorm, LlamaRMSNorm, "
                        "T5LayerNorm, ... and any class ending in RMSNorm or LayerNorm)")
    g.add_argument("--only-class", dest="only_classes", action="append", default=[],
                   metavar="PATTERN",
                   help="hook only modules whose class name matches this glob (repeatable; "
                        "replaces the default classes)")
    g.add_argument("--match", metavar="REGEX",
                   help="hook only modules whose qualified name matches, searched anywhere in "
                        "it (see NAME PATTERNS below); with --only-class '*' any module so "
                        "named")
    g.add_argument("--norm-kind", action="append", default=[], metavar="REGEX=KIND",
                   help="norm kind (layernorm or rmsnorm) of the modules whose name matches "
                        "REGEX (a name pattern; repeatable, first match wins). Default: "
                        "layernorm for "
                        "nn.LayerNorm, otherwise rmsnorm when the class name contains RMS "
                        "(or is T5LayerNorm and kin), else layernorm, switched when the "
                        "captured output only fits the other kind")
    g = p.add_argument_group("what to capture")
    g.add_argument("--tokens", type=int, default=4096, metavar="N",
                   help="at most N tokens (rows) per module, the first ones; 0 = all "
                        "(default 4096)")
    g.add_argument("--grad", action="store_true",
                   help="also capture d loss / d output of every module")
    g.add_argument("--loss", metavar="MODULE:CALLABLE",
                   help="with --grad: loss(output) or loss(output, inputs) -> scalar "
                        "(default: sum of squares of the model's output)")
    g.add_argument("--dtype", choices=("keep", "f32", "f16", "bf16"), default="keep",
                   help="dtype of the written tensors (default keep: as captured, float32, "
                        "float16, bfloat16 or float64)")
    g = p.add_argument_group("output")
    g.add_argument("--config", metavar="OUT.json",
                   help="the normcmp run config to write (default: OUT with .json for "
                        ".safetensors; 'none' for no config)")
    g.add_argument("--name", help="the config's name (default: OUT's file name stem)")
    g.add_argument("-q", "--quiet", action="store_true",
                   help="nothing on stderr but errors: no progress, no warnings (progress "
                        "is only shown on a terminal anyway)")
    g.add_argument("-v", "--verbose", action="store_true",
                   help="also notes on stderr: the interpreter re-executed under, ...")
    a = p.parse_args(argv)
    if need_model:
        check_model_args(a)
    if a.tokens < 0:
        raise Fail("--tokens: expected a number >= 0")
    if a.match is not None:
        a.match = compile_pattern(a.match, "--match")
    kinds = []
    for s in a.norm_kind:
        rx, sep, kind = s.rpartition("=")
        if not sep or kind not in KINDS:
            raise Fail(f"--norm-kind: expected REGEX=layernorm or REGEX=rmsnorm, got {s!r}")
        kinds.append((compile_pattern(rx, "--norm-kind"), kind))
    a.norm_kind = kinds
    if a.loss and not a.grad:
        raise Fail("--loss needs --grad")
    a.sharded = not a.out.endswith(".safetensors")
    if a.sharded and not a.out.rstrip("/"):
        raise Fail("--out: expected a file name ending in .safetensors or a folder, not /")
    if a.config is None:
        stem = a.out[:-len(".safetensors")] if not a.sharded else a.out.rstrip("/")
        a.config = stem + ".json"
    elif a.config == "none":
        a.config = None
    if a.config and os.path.abspath(a.config) == os.path.abspath(a.out):
        raise Fail("--config: the same file as --out")
    if a.name is None:
        base = os.path.basename(a.out.rstrip("/"))
        a.name = base[:-len(".safetensors")] if base.endswith(".safetensors") else base
    return a


# ------------------------------------------------------------------ capture

# Rows are checked and written in blocks of at most this many elements, so
# that the float64 copies of the self-check stay small (about 0.5 MB each).
BLOCK_ELEMS = 1 << 16
WIRE = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64"}
ITEMSIZE = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}


class Capture:
    """What one norm module (or one graph layer_norm) gave. Its rows do not
    stay in memory: each call's input and output go, block by block, to raw
    files in the staging folder (the spool) as they are captured, and the
    gradients to their slots in a third file as backward reaches them;
    the final files are assembled from these. What stays is the weight,
    the bias, the row counts and the self-check's running maxima."""

    def __init__(self, name, cls, kind, kind_source, eps, eps_source, spool, index):
        self.name, self.cls = name, cls
        self.kind, self.kind_source = kind, kind_source
        self.eps, self.eps_source = eps, eps_source
        self.index = index  # the order modules were selected in (1-based)
        # scratch files in the output's staging folder (outputs.Output.scratch_path)
        self.spool = {r: spool(f"spool-{index:05d}.{r}") for r in ("input", "output",
                                                                   "grad_output")}
        self.d = None
        self.weight = self.bias = None
        self.weight_offset = 0
        self.rows = 0
        self.call_rows = []  # rows captured per call, for the gradient slots
        self.grad_got = []   # whether each call's gradient arrived
        self.calls = 0
        self.grad_calls = 0
        self.dtype = {}      # role -> wire dtype ("F32", ...), fixed by the first call
        self.source_dtype = None
        self.diffs = {}      # (kind, weight offset) -> max |recomputed - output| so far
        self.ymax = 0.0
        self.finite_rows = 0
        self.check = None
        self.warned = False
        self.has_grad = False
        self.seq = set()     # tokens per sequence of each call ([B, T, ..., d]: T ...)

    def note_sequence(self, x, d):
        """Records a call's tokens per sequence: all but the first and last
        axes of its input (none for a [n, d] input)."""
        if x.dim() >= 3 and x.shape[0] > 0:
            self.seq.add(x.numel() // (x.shape[0] * d))

    def full(self, limit):
        return limit and self.rows >= limit

    def path(self, role):
        return self.spool[role]

    def add_rows(self, x, y, a, torch, np):
        """Appends rows x, y [n, d] (any device) to the spool, checking them
        against the norm on the way; returns the number of rows."""
        n, d = x.shape
        if not self.dtype:
            self.source_dtype = str(y.dtype).replace("torch.", "")
            self.dtype["input"] = wire_dtype(x.dtype, a.dtype)
            self.dtype["output"] = self.dtype["grad_output"] = wire_dtype(y.dtype, a.dtype)
        step = max(1, BLOCK_ELEMS // d)
        w = self.weight.double().numpy() if self.weight is not None else None
        b = self.bias.double().numpy() if self.bias is not None else None
        with open(self.path("input"), "ab") as fx, open(self.path("output"), "ab") as fy:
            for r in range(0, n, step):
                xb, yb = x[r:r + step].detach(), y[r:r + step].detach()
                self.check_block(xb.to("cpu", torch.float64).numpy(),
                                 yb.to("cpu", torch.float64).numpy(), w, b, np)
                write_block(fx, xb, self.dtype["input"], torch)
                write_block(fy, yb, self.dtype["output"], torch)
        self.rows += n
        return n

    def check_block(self, x, y, w, b, np):
        ok = np.isfinite(x).all(axis=1) & np.isfinite(y).all(axis=1)
        if not ok.any():
            return
        x, y = x[ok], y[ok]
        self.finite_rows += len(x)
        self.ymax = max(self.ymax, float(np.abs(y).max()))
        for kind in KINDS:
            for off in ((0, 1) if w is not None else (0,)):
                wo = w + off if w is not None else None
                dmax = float(np.abs(recompute(x, kind, self.eps, wo, b, np) - y).max())
                key = (kind, off)
                self.diffs[key] = max(self.diffs.get(key, 0.0), dmax)

    def add_grad(self, slot, g, torch):
        """Writes call slot's gradient rows g [rows, d] at their place."""
        dt = self.dtype["grad_output"]
        off = sum(self.call_rows[:slot]) * self.d * ITEMSIZE[dt]
        path = self.path("grad_output")
        with open(path, "r+b" if os.path.exists(path) else "wb") as f:
            f.seek(off)
            step = max(1, BLOCK_ELEMS // self.d)
            for r in range(0, g.shape[0], step):
                write_block(f, g[r:r + step].detach(), dt, torch)
        self.grad_got[slot] = True
        self.grad_calls += 1


def wire_dtype(dtype, asked):
    """The dtype a tensor is written in: as captured (float32, float16,
    bfloat16, float64; anything else as float32) unless --dtype asks."""
    if asked != "keep":
        return {"f32": "F32", "f16": "F16", "bf16": "BF16"}[asked]
    return WIRE.get(str(dtype).replace("torch.", ""), "F32")


def write_block(f, t, wire, torch):
    """Writes the rows of t in wire dtype, little-endian, to file f."""
    tdt = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "F64": torch.float64}[wire]
    t = t.to("cpu", tdt).contiguous()
    arr = t.view(torch.int16).numpy() if wire == "BF16" else t.numpy()
    if sys.byteorder != "little":
        arr = arr.byteswap()
    f.write(arr.data)


def default_kind(name, cls, is_torch_ln, overrides):
    for rx, kind in overrides:
        if rx.search(name):
            return kind, "--norm-kind"
    if is_torch_ln:
        return "layernorm", "class"
    if "RMS" in cls.upper() or cls in KNOWN_RMS:
        return "rmsnorm", "class name"
    return "layernorm", "class name"


def module_eps(m, kind):
    for attr in EPS_ATTRS:
        v = getattr(m, attr, None)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
            return float(v), attr
    return (1e-5 if kind == "layernorm" else 1e-6), "default"


def module_param(m, attrs, d, torch):
    for attr in attrs:
        v = getattr(m, attr, None)
        if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() == d:
            return v.detach().reshape(d).to("cpu", copy=True)
    return None


# torch's norms over a batch, over channel groups or across channels: not the
# per-token norms normcmp models, so never listed as "not hooked"
OTHER_NORMS = ("BatchNorm*", "SyncBatchNorm", "LazyBatchNorm*", "InstanceNorm*",
               "LazyInstanceNorm*", "GroupNorm", "LocalResponseNorm", "CrossMapLRN2d")


def class_patterns(a):
    """The class globs to hook: --only-class (or the default classes), and
    every --class."""
    return (a.only_classes or DEFAULT_CLASSES) + a.classes


def select_modules(a, model, log, torch):
    """[(name, module)] to hook, in named_modules() order; warns about the
    norm-like modules left out."""
    patterns = class_patterns(a)
    chosen = []
    for name, m in model.named_modules():
        cls = type(m).__name__
        if not any(fnmatch.fnmatchcase(cls, p) for p in patterns):
            continue
        if a.match is not None and not a.match.search(name):
            continue
        if not name:
            log.warn("the model itself matches; skipped")
            continue
        chosen.append((name, m))
    if not chosen:
        seen = sorted({type(m).__name__ for _, m in model.named_modules()
                       if "norm" in type(m).__name__.lower()})
        hint = f" (norm-like classes in the model: {', '.join(seen[:8])})" if seen else \
            " (the model has no class with 'Norm' in its name)"
        raise Fail("no module matches " + (f"--match {a.match.pattern!r} and " if a.match else "")
                   + f"the classes {', '.join(patterns) if a.only_classes else '(default list)'}"
                   + hint)
    if not a.only_classes:  # --only-class: the user chose; nothing to point out
        warn_unhooked(a, model, {id(m) for _, m in chosen}, log)
    return chosen


def norm_like(name, m):
    """A module that looks like a per-token norm by its class name ("norm"
    in it) but holds no other module (a pre-norm wrapper holds its norm)
    and is none of torch's batch/group/instance norms."""
    cls = type(m).__name__
    return (bool(name) and "norm" in cls.lower() and not any(True for _ in m.children())
            and not any(fnmatch.fnmatchcase(cls, p) for p in OTHER_NORMS))


def warn_unhooked(a, model, hooked, log):
    """One warning naming the norm-like modules (within --match) that no
    class pattern took, and the --class options that would take them."""
    left = [(name, type(m).__name__) for name, m in model.named_modules()
            if id(m) not in hooked and norm_like(name, m)
            and (a.match is None or a.match.search(name))]
    if not left:
        return
    shown = ", ".join(f"{n} ({c})" for n, c in left[:4])
    more = f" and {len(left) - 4} more" if len(left) > 4 else ""
    classes = sorted({c for _, c in left})
    what = "module looks like a norm but was" if len(left) == 1 else \
        "modules look like norms but were"
    log.warn(f"{len(left)} {what} not hooked: {shown}{more}; add "
             + " ".join(f"--class {c}" for c in classes))


def norm_width(m, x, torch):
    """d: the product of normalized_shape for nn.LayerNorm, else the last axis."""
    if isinstance(m, torch.nn.LayerNorm):
        return int(math.prod(m.normalized_shape))
    return int(x.shape[-1])


def spool_write(cap, fn):
    """Runs a spool write; a full disk or a missing folder is a one-line error."""
    try:
        return fn()
    except OSError as e:
        raise Fail(f"{cap.name}: cannot write its rows to {os.path.dirname(cap.path('input'))}: "
                   f"{e.strerror or e}", 1)


def run_hooked(a, model, args, kwargs, spool, log, torch, np):
    chosen = select_modules(a, model, log, torch)
    caps = {}
    handles = []
    limit = a.tokens

    for k, (name, m) in enumerate(chosen):
        cls = type(m).__name__
        kind, ksrc = default_kind(name, cls, isinstance(m, torch.nn.LayerNorm), a.norm_kind)
        eps, esrc = module_eps(m, kind)
        cap = Capture(name, cls, kind, ksrc, eps, esrc, spool, k + 1)
        caps[name] = cap

        def hook(mod, inp, out, cap=cap):
            cap.calls += 1
            if cap.full(limit):
                return
            x = inp[0] if isinstance(inp, tuple) and inp else None
            y = out[0] if isinstance(out, (tuple, list)) and out else out
            if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
                if not cap.warned:
                    cap.warned = True
                    log.warn(f"{cap.name}: called without a tensor as first positional argument "
                             "or output (forward hooks do not see keyword arguments); "
                             "not captured")
                return
            d = norm_width(mod, x, torch)
            if x.numel() == 0 or x.numel() % d or y.shape != x.shape or not x.is_floating_point():
                cap.warned = True
                log.warn(f"{cap.name}: input {tuple(x.shape)} / output {tuple(y.shape)} do not "
                         f"split into rows of {d}; call {cap.calls} not captured")
                return
            if cap.d is None:
                cap.d = d
                cap.weight = module_param(mod, WEIGHT_ATTRS, d, torch)
                cap.bias = module_param(mod, BIAS_ATTRS, d, torch)
            elif cap.d != d:
                log.warn(f"{cap.name}: width {d} differs from the first call's {cap.d}; "
                         "call not captured")
                return
            n = x.numel() // d
            take = n if not limit else min(n, limit - cap.rows)
            first = cap.rows == 0
            cap.note_sequence(x, d)
            spool_write(cap, lambda: cap.add_rows(x.detach().reshape(n, d)[:take],
                                                  y.detach().reshape(n, d)[:take], a, torch, np))
            if first:
                log.progress(f"[{cap.index}/{len(chosen)}] {cap.name}: {take} x {d} "
                             f"{cap.source_dtype}")
            if a.grad:
                slot = len(cap.call_rows)
                cap.call_rows.append(take)
                cap.grad_got.append(False)
                if y.requires_grad:
                    def ghook(g, cap=cap, slot=slot, n=n, d=d, take=take):
                        spool_write(cap, lambda: cap.add_grad(slot, g.reshape(n, d)[:take],
                                                              torch))
                    y.register_hook(ghook)

        handles.append(m.register_forward_hook(hook))
    log.progress(f"hooked {len(caps)} modules; running the model")
    t0 = time.time()
    try:
        if a.grad:
            for p in model.parameters():
                if p.is_floating_point():
                    p.requires_grad_(True)
            args = tuple(v.detach().requires_grad_(True) if isinstance(v, torch.Tensor)
                         and v.is_floating_point() else v for v in args)
            kwargs = {k: v.detach().requires_grad_(True) if isinstance(v, torch.Tensor)
                      and v.is_floating_point() else v for k, v in kwargs.items()}
            with torch.enable_grad():
                out = model(*args, **kwargs)
                loss = compute_loss(a.loss, out, args, kwargs, torch)
                log.progress(f"loss {loss.item():.6g}; backward")
                loss.backward()
        else:
            with torch.no_grad():
                model(*args, **kwargs)
    except Fail:
        raise
    except Exception as e:  # noqa: BLE001
        raise Fail(f"the model failed: {type(e).__name__}: {one_line(e)}", 1)
    finally:
        for h in handles:
            h.remove()
    log.progress(f"forward{' + backward' if a.grad else ''} took {time.time() - t0:.2f} s")
    return [caps[n] for n, _ in chosen]


# ----------------------------------------------------------- TorchScript graph

def attr_path(v, self_value):
    """The attribute path of a prim::GetAttr chain from self, or None."""
    parts = []
    while v.node().kind() == "prim::GetAttr":
        parts.append(v.node().s("name"))
        v = v.node().input()
    if v is self_value or (v.debugName() == self_value.debugName()):
        return ".".join(reversed(parts))
    return None


def graph_layer_norms(sm, match, log):
    """(a copy of the scripted model's inlined forward graph, [(name, node,
    inputs, eps or None)] for each aten::layer_norm at its top level whose
    name matches `match` (a compiled regex or None)). A layer is named after
    its weight's attribute path (blocks.0.ln1) or, when the weights are
    constants (a traced or frozen model), ln00, ln01, ... in graph order;
    the swap test names the layers the same way. Fails when none is left."""
    g = sm.inlined_graph.copy() if hasattr(sm, "inlined_graph") else sm.forward.graph.copy()
    self_value = next(iter(g.inputs()))
    top = [n for n in g.nodes() if n.kind() == "aten::layer_norm"]
    nested = len(g.findAllNodes("aten::layer_norm", True)) - len(top)
    if nested:
        log.warn(f"{nested} layer_norm calls inside loops or branches of the graph cannot be "
                 "captured")
    layers = []
    for k, n in enumerate(top):
        ins = list(n.inputs())
        wname = None
        for v in ins[2:4]:
            if v.node().kind() == "prim::GetAttr":
                p = attr_path(v, self_value)
                if p and "." in p:
                    wname = p.rsplit(".", 1)[0]
                    break
        name = wname or f"ln{k:02d}"
        eps_node = ins[4].node()
        eps = ins[4].toIValue() if eps_node.kind() == "prim::Constant" else None
        layers.append((name, n, ins, eps))
    if match is not None:
        layers = [t for t in layers if match.search(t[0])]
    if not layers:
        raise Fail("no aten::layer_norm in the TorchScript graph" +
                   (f" matches --match {match.pattern!r}" if match else "") +
                   " (RMSNorm written as tensor operations cannot be found in a graph)")
    return g, layers


def run_scripted(a, sm, args, kwargs, spool, log, torch, np):
    if kwargs:
        raise Fail("a TorchScript model takes positional inputs only; the inputs are a dict")
    if a.classes or a.only_classes:
        log.warn("--class and --only-class do not apply to a TorchScript model: every "
                 "aten::layer_norm is taken")
    g, layers = graph_layer_norms(sm, a.match, log)
    base = len(list(g.outputs()))
    for _, n, ins, eps in layers:
        g.registerOutput(ins[0])
        g.registerOutput(n.output())
        g.registerOutput(ins[2])
        g.registerOutput(ins[3])
        g.registerOutput(ins[4])
    g.makeMultiOutputIntoTuple()
    fn = torch._C._create_function_from_graph("normcmp_dump_forward", g)
    log.progress(f"instrumented {len(layers)} layer_norm nodes of the TorchScript graph; running")
    t0 = time.time()
    try:
        if a.grad:
            args = tuple(v.detach().requires_grad_(True) if isinstance(v, torch.Tensor)
                         and v.is_floating_point() else v for v in args)
            with torch.enable_grad():
                res = fn(sm._c, *args)
        else:
            with torch.no_grad():
                res = fn(sm._c, *args)
    except Exception as e:  # noqa: BLE001
        raise Fail(f"the model failed: {type(e).__name__}: {one_line(e)}", 1)
    res = list(res)
    orig = res[0] if base == 1 else tuple(res[:base])
    caps, byname = [], {}
    outs = []
    for i, (name, n, ins, eps) in enumerate(layers):
        x, y, w, b, e = res[base + 5 * i: base + 5 * i + 5]
        cap = byname.get(name)
        if cap is None:
            kind, ksrc = default_kind(name, "aten::layer_norm", True, a.norm_kind)
            cap = Capture(name, "aten::layer_norm", kind, ksrc, float(e),
                          "graph constant" if eps is not None else "graph value", spool,
                          len(caps) + 1)
            byname[name] = cap
            caps.append(cap)
        cap.calls += 1
        d = int(w.numel()) if isinstance(w, torch.Tensor) else int(x.shape[-1])
        if cap.d is None:
            cap.d = d
            cap.weight = w.detach().reshape(d).to("cpu", copy=True) if isinstance(w, torch.Tensor) else None
            cap.bias = b.detach().reshape(d).to("cpu", copy=True) if isinstance(b, torch.Tensor) else None
        if cap.full(a.tokens) or x.numel() % d:
            continue
        nrow = x.numel() // d
        take = nrow if not a.tokens else min(nrow, a.tokens - cap.rows)
        first = cap.rows == 0
        cap.note_sequence(x, d)
        spool_write(cap, lambda: cap.add_rows(x.detach().reshape(nrow, d)[:take],
                                              y.detach().reshape(nrow, d)[:take], a, torch, np))
        if first:
            log.progress(f"[{cap.index}/{len(layers)}] {cap.name}: {take} x {d} "
                         f"{cap.source_dtype}")
        if a.grad:
            cap.call_rows.append(take)
            cap.grad_got.append(False)
            outs.append((cap, len(cap.call_rows) - 1, y, nrow, d, take))
    if a.grad:
        need = [t for t in outs if t[2].requires_grad]
        if not need:
            raise Fail("--grad: no gradient reaches any layer_norm output of this TorchScript "
                       "model (quantized or frozen operations have none)", 1)
        loss = compute_loss(a.loss, orig, args, {}, torch)
        grads = torch.autograd.grad(loss, [t[2] for t in need], allow_unused=True)
        for (cap, slot, _, nrow, d, take), gr in zip(need, grads):
            if gr is not None:
                spool_write(cap, lambda: cap.add_grad(slot, gr.reshape(nrow, d)[:take], torch))
    log.progress(f"run took {time.time() - t0:.2f} s")
    return caps


# ------------------------------------------------------------------ checking

def finish(caps, a, log, torch):
    """Settles each module's kind and weight from its self-check (switching
    the inferred kind, or Gemma's (1 + w), when only that fits the captured
    output), fills the gradient slots that got nothing with zeros, and drops
    modules that gave nothing."""
    kept = []
    for c in caps:
        if not c.rows:
            if not c.warned:
                log.warn(f"{c.name}: " + ("never called" if not c.calls else "nothing captured")
                         + "; left out")
            continue
        if a.grad:
            if c.grad_calls == 0:
                log.warn(f"{c.name}: no gradient reached its output; no grad_output")
            else:
                if not all(c.grad_got):
                    log.warn(f"{c.name}: some calls got no gradient; zeros there")
                # the slots never written read as zeros (a sparse tail or hole)
                with open(c.path("grad_output"), "r+b") as f:
                    f.truncate(c.rows * c.d * ITEMSIZE[c.dtype["grad_output"]])
                c.has_grad = True
        decide(c, log, torch)
        kept.append(c)
    if not kept:
        raise Fail("no hooked module captured anything (were they called with a tensor?)", 1)
    return kept


def recompute(x, kind, eps, w, b, np):
    if kind == "layernorm":
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        y = (x - mu) / np.sqrt(var + eps)
    else:
        y = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None and kind == "layernorm":
        y = y + b
    return y


def decide(c, log, torch):
    """c.check: max |output - norm(input) * w + b| over the captured rows
    (float64, before any --dtype rounding), for the kind and weight kept."""
    if not c.finite_rows:
        c.check = float("nan")
        return
    # float32 outputs agree to ~1e-6 relative; half precision to ~1e-3
    tol = (1e-3 if c.source_dtype in ("float32", "float64") else 3e-2) * max(1.0, c.ymax)
    best = c.diffs[(c.kind, 0)]
    if c.kind == "rmsnorm" and c.bias is not None:
        log.warn(f"{c.name}: an RMSNorm-like module with a bias; the bias is written but "
                 "normcmp's RMSNorm has none")
    if best > tol and c.kind_source != "--norm-kind":
        other = "rmsnorm" if c.kind == "layernorm" else "layernorm"
        d2 = c.diffs[(other, 0)]
        if d2 <= tol:
            log.warn(f"{c.name}: {c.cls} taken as {c.kind} from its {c.kind_source}, but its "
                     f"output is {other} of its input; using {other} (override with --norm-kind)")
            c.kind, c.kind_source, best = other, "output check", d2
    if best > tol and c.weight is not None:
        d3 = c.diffs[(c.kind, 1)]
        if d3 <= tol:
            log.warn(f"{c.name}: the output is {c.kind} * (1 + weight) (Gemma style); "
                     "writing 1 + weight as the weight")
            c.weight = c.weight.double() + 1
            c.weight_offset = 1
            best = d3
    if best > tol:
        log.warn(f"{c.name}: the output differs from {c.kind}(input) * weight + bias by up to "
                 f"{best:.3g} (eps {c.eps:g}); normcmp's real_output_check will show it")
    c.check = best


# ------------------------------------------------------------------ writing

def module_meta(c):
    m = {f"{c.name}.class": c.cls, f"{c.name}.norm": c.kind,
         f"{c.name}.norm_source": c.kind_source, f"{c.name}.eps": repr(c.eps),
         f"{c.name}.eps_source": c.eps_source, f"{c.name}.calls": str(c.calls),
         f"{c.name}.source_dtype": c.source_dtype,
         f"{c.name}.check_max_abs_diff": f"{c.check:.3g}"}
    if c.weight_offset:
        m[f"{c.name}.weight_offset"] = "1 (the module multiplies by 1 + weight)"
    if len(c.seq) == 1 and min(c.seq) > 1:
        # normcmp's token bootstrap resamples whole sequences (docs/report.md)
        m[f"{c.name}.tokens_per_sequence"] = str(min(c.seq))
    return m


def module_tensors(c, a, torch):
    """(name, shape, wire dtype, nbytes, source): source is a spool file to
    copy or the bytes themselves (weight and bias)."""
    out = []
    for role in ("input", "output"):
        dt = c.dtype[role]
        out.append((f"{c.name}.{role}", (c.rows, c.d), dt, c.rows * c.d * ITEMSIZE[dt],
                    c.path(role)))
    for role, t in (("weight", c.weight), ("bias", c.bias)):
        if t is None:
            continue
        if a.dtype != "keep":
            dt = wire_dtype(None, a.dtype)
        else:  # as the module holds it; 1 + weight (Gemma) in float32
            dt = "F32" if role == "weight" and c.weight_offset else wire_dtype(t.dtype, "keep")
        buf = io.BytesIO()
        write_block(buf, t.reshape(1, -1), dt, torch)
        data = buf.getvalue()
        out.append((f"{c.name}.{role}", (c.d,), dt, len(data), data))
    if c.has_grad:
        dt = c.dtype["grad_output"]
        out.append((f"{c.name}.grad_output", (c.rows, c.d), dt, c.rows * c.d * ITEMSIZE[dt],
                    c.path("grad_output")))
    return out


def copy_file(dst, path, n):
    """Appends the n bytes of file path to the unbuffered file dst, in the
    kernel where it can (copy_file_range), else through a 1 MB buffer."""
    with open(path, "rb") as src:
        left = n
        if hasattr(os, "copy_file_range"):
            try:
                while left:
                    k = os.copy_file_range(src.fileno(), dst.fileno(), left)
                    if k == 0:
                        break
                    left -= k
            except OSError:
                pass  # another file system, or not supported: copy below
        while left:
            chunk = src.read(min(left, 1 << 20))
            if not chunk:
                break
            dst.write(chunk)
            left -= len(chunk)
    if left:
        raise Fail(f"{path}: {left} bytes short while assembling the dump", 1)


def write_safetensors(path, tensors, metadata, log, what):
    """tensors: module_tensors entries, written in order after the header
    into the new file path (in a staging folder: outputs.create, flushed to
    disk); the spool files are deleted once copied. Returns its size."""
    header, off = {}, 0
    for name, shape, dt, nbytes, _ in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + nbytes]}
        off += nbytes
    header["__metadata__"] = metadata
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * (-len(hj) % 8)
    with outputs.create(path) as f:
        f.write(struct.pack("<Q", len(hj)) + hj)
        for name, _, _, nbytes, src in tensors:
            if isinstance(src, bytes):
                f.write(src)
            else:
                copy_file(f, src, nbytes)
                os.unlink(src)
            log.progress(f"{what}: {name} ({nbytes / 1e6:.1f} MB)")
    return 8 + len(hj) + off


def write_one_file(a, out, caps, meta, log, torch):
    tensors = []
    for c in caps:
        tensors += module_tensors(c, a, torch)
        meta.update(module_meta(c))
    return write_safetensors(out.staged, tensors, meta, log, "writing")


def write_folder(a, out, caps, meta, log, torch):
    """One shard per module, as Hugging Face names them, and the index,
    in the output's staging folder."""
    weight_map, total, size = {}, 0, 0
    for k, c in enumerate(caps):
        fn = f"model-{k + 1:05d}-of-{len(caps):05d}.safetensors"
        tensors = module_tensors(c, a, torch)
        m = dict(meta)
        m.update(module_meta(c))
        size += write_safetensors(os.path.join(out.stage, fn), tensors, m, log,
                                  f"shard {k + 1}/{len(caps)}")
        total += sum(t[3] for t in tensors)
        weight_map.update({t[0]: fn for t in tensors})
    with outputs.create(os.path.join(out.stage, INDEX_NAME), text=True) as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")
    return size


def glob_escape(name):
    """name as a normcmp tensor pattern that matches exactly it: the glob
    characters * ? [ and the escape \\ itself escaped with a backslash
    (fnmatch(3) without FNM_NOESCAPE; docs/config.md)."""
    return "".join("\\" + ch if ch in "*?[\\" else ch for ch in name)


def config_dict(target, folder, name, caps):
    """The config for `normcmp run` in folder: one layer per module, its
    tensor named exactly (escaped), its own norm kind and eps."""
    rel = os.path.relpath(os.path.abspath(target), folder)
    return {"name": name, "layers": [
        {"file": rel, "tensor": glob_escape(f"{c.name}.input"), "norm": c.kind, "eps": c.eps}
        for c in caps]}


def write_config(out, target, name, caps):
    with outputs.create(out.staged, text=True) as f:
        json.dump(config_dict(target, out.folder, name, caps), f, indent=2)
        f.write("\n")


def input_files(a):
    """The files the run reads (--checkpoint and the .py files of
    --model, --inputs, --loss): no output may replace one of them."""
    files = [a.checkpoint] if a.checkpoint else []
    for spec in (a.model, getattr(a, "inputs", None), a.loss):
        if isinstance(spec, str):
            mod = spec.rpartition(":")[0]
            if mod.endswith(".py") or os.sep in mod:
                files.append(mod)
    return files


def plan_outputs(a, log):
    """The outputs (the dump: a file or a folder; its config), checked,
    locked and staged before the model runs: (writer, dump out, config out
    or None)."""
    w = outputs.Writer(TOOL, inputs=input_files(a), log=log)
    try:
        out = w.folder(a.out, "--out") if a.sharded else w.file(a.out, "--out")
        cfg = w.file(a.config, "--config") if a.config else None
    except BaseException:
        w.abort()
        raise
    return w, out, cfg


# ------------------------------------------------------------------ main

def dump(a, model, scripted, args, kwargs, in_desc, log, torch, np, command, planned=None):
    """Runs the model on (args, kwargs) with its norms captured and writes
    the dump and its config as a asks; returns (captures, the file or index
    normcmp reads, bytes written). planned: plan_outputs()'s result (made
    here when None). The one implementation behind the command line and
    the notebook module (normcmp.capture, normcmp.analyse)."""
    w, out, cfg_out = planned or plan_outputs(a, log)
    with w:
        try:
            if scripted:
                caps = run_scripted(a, model, args, kwargs, out.scratch_path, log, torch, np)
            else:
                caps = run_hooked(a, model, args, kwargs, out.scratch_path, log, torch, np)
            caps = finish(caps, a, log, torch)
            meta = {"format": "normcmp activation dump", "tool": TOOL, "command": command,
                    "model": a.model or a.checkpoint or type(model).__name__,
                    "inputs": in_desc, "torch": torch.__version__, "dtype": a.dtype,
                    "tokens_limit": str(a.tokens), "modules": json.dumps([c.name for c in caps])}
            if a.model_args:
                meta["model_args"] = json.dumps(a.model_args)
            if a.checkpoint:
                meta["checkpoint"] = a.checkpoint
            if a.grad:
                meta["loss"] = a.loss or "sum of squares of the model output"
            meta["capture"] = ("TorchScript graph outputs (aten::layer_norm)" if scripted
                               else "forward hooks")
            if a.sharded:
                size = write_folder(a, out, caps, meta, log, torch)
                target = os.path.join(a.out.rstrip("/"), INDEX_NAME)
            else:
                size = write_one_file(a, out, caps, meta, log, torch)
                target = a.out
            if cfg_out:
                write_config(cfg_out, target, a.name, caps)
        except OSError as e:
            raise Fail(f"--out: cannot write {a.out}: {e.strerror or e}", 1)
        w.commit()
    return caps, target, size


def main(argv=None, prog=None, script=None):
    """The command line: argv (default sys.argv[1:]); prog: the name in
    messages (default the invoked name); script: the file to re-execute
    under another interpreter (default the invoked one)."""
    argv = sys.argv[1:] if argv is None else argv
    prog = prog or os.path.basename(sys.argv[0]) or "dump_activations.py"
    a = parse_args(argv, prog)
    log = Log(prog, a.quiet, a.verbose)
    torch, np = import_torch(argv, script or sys.argv[0], log)
    planned = plan_outputs(a, log)  # a bad output fails before the model is built
    with planned[0]:
        t0 = time.time()
        model, scripted, model_mod = build_model(a, log, torch)
        args, kwargs, in_desc = build_inputs(a, model, model_mod, log, torch)
        command = " ".join(shlex.quote(s) for s in [sys.argv[0]] + list(argv))
        caps, _, size = dump(a, model, scripted, args, kwargs, in_desc, log, torch, np, command,
                             planned)
    rows = sorted({c.rows for c in caps})
    print(f"wrote {a.out}: {len(caps)} modules, {'/'.join(map(str, rows))} tokens each, "
          f"{size / 1e6:.2f} MB" + (f" in {len(caps)} shards" if a.sharded else "")
          + (f"; config {a.config}" if a.config else "") + f" ({time.time() - t0:.1f} s)")
    return 0
