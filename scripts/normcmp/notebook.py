"""normcmp from Python, without files by hand (a notebook, a script):

    import normcmp
    res = normcmp.analyse(model, inputs)          # dump, fit, parse
    res                                           # in Jupyter: the verdicts and figures
    res.verdicts                                  # one dict per layer (pandas.DataFrame(res.verdicts))
    res.report, res.figures, res.folder           # the parsed report.json, figure paths, folder
    acts = normcmp.capture(model, inputs)         # {module: {"input": array, ...}} in memory
    swap = normcmp.swap(model, inputs, res.folder, loss=my_loss)   # the swap test

capture() and analyse() run the dump script's own code (normcmp/dump.py:
the same hooks, TorchScript graph capture and checks) into a temporary
folder; analyse() then runs the normcmp binary on it (`normcmp run`: the
source tree's build/normcmp, the installed one, or $NORMCMP_BIN) and reads
its report. swap() runs normcmp/swaptest.py's measurements. docs/notebook.md
describes every argument and field.
"""
import base64
import html
import json
import os
import shutil
import subprocess
import tempfile

from . import safetensors
from .common import Fail, Log, paths

PROG = "normcmp"


def _torch():
    try:
        import numpy as np
        import torch
    except ImportError as e:
        raise Fail(f"normcmp's Python module needs PyTorch and NumPy ({e}); on Debian/Ubuntu "
                   "`sudo apt-get install python3-torch python3-numpy`") from None
    return torch, np


def _inputs(inputs, torch):
    """(args, kwargs) of a model input as --inputs returns it: a tensor,
    a tuple/list (positional) or a dict (keyword)."""
    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    if isinstance(inputs, dict):
        return (), dict(inputs)
    raise Fail(f"inputs: a {type(inputs).__name__}, expected a tensor, a tuple/list or a dict")


def _dump_args(out, tokens, grad, classes, only_classes, match, norm_kind, dtype, config):
    from . import dump
    argv = ["-o", out, "--tokens", str(int(tokens)), "--dtype", dtype, "-q"]
    argv += ["--grad"] if grad else []
    for c in classes:
        argv += ["--class", c]
    for c in only_classes:
        argv += ["--only-class", c]
    if match is not None:
        argv += ["--match", match]
    for rx, kind in (norm_kind or {}).items():
        argv += ["--norm-kind", f"{rx}={kind}"]
    argv += ["--config", config or "none"]
    return dump.parse_args(argv, PROG, need_model=False)


def _run_dump(model, inputs, out, loss, quiet, **kw):
    from . import dump
    torch, np = _torch()
    a = _dump_args(out, **kw)
    a.loss = loss  # a callable (or None: the sum of squares of the output)
    log = Log(PROG, quiet=quiet)
    args, kwargs = _inputs(inputs, torch)
    scripted = isinstance(model, torch.jit.ScriptModule)
    was_training = getattr(model, "training", False)
    model.eval()
    try:
        caps, target, _ = dump.dump(a, model, scripted, args, kwargs, "normcmp.capture", log,
                                    torch, np, "normcmp.capture / normcmp.analyse (Python)")
    finally:
        if was_training:
            model.train()
    return caps, target, a


def capture(model, inputs, tokens=4096, grad=False, loss=None, classes=(), only_classes=(),
            match=None, norm_kind=None, dtype="keep", quiet=True):
    """The norm activations of `model` on `inputs`, in memory: {module name:
    {"input": [N, d], "output": [N, d], and "weight", "bias" [d] when the
    module has them, "grad_output" [N, d] with grad=True}} as float32 (or
    float64) NumPy arrays, plus the key "__metadata__" with the dump's
    metadata (norm kind, eps, self-check per module). Arguments as the dump
    script's options (--tokens, --grad, --class, --only-class, --match,
    --norm-kind as {regex: kind}, --dtype); loss: a callable
    loss(output) or loss(output, inputs) -> scalar, with grad=True."""
    torch, np = _torch()
    tmp = tempfile.mkdtemp(prefix="normcmp-capture-")
    try:
        out = os.path.join(tmp, "capture.safetensors")
        _run_dump(model, inputs, out, loss, quiet, tokens=tokens, grad=grad, classes=classes,
                  only_classes=only_classes, match=match, norm_kind=norm_kind, dtype=dtype,
                  config=None)
        tensors, meta = safetensors.read(out, np)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res = {}
    for name in json.loads(meta.get("modules", "[]")):
        res[name] = {k.rsplit(".", 1)[1]: v for k, v in tensors.items()
                     if k.rsplit(".", 1)[0] == name}
    res["__metadata__"] = meta
    return res


def binary():
    """The normcmp binary: $NORMCMP_BIN, else the source tree's build (or
    the installed binary beside this installed module), else normcmp on
    PATH."""
    env = os.environ.get("NORMCMP_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise Fail(f"$NORMCMP_BIN: {env} is not an executable file")
        return env
    p = paths()["bin"]
    if os.path.isfile(p) and os.access(p, os.X_OK):
        return p
    found = shutil.which("normcmp")
    if found:
        return found
    raise Fail(f"cannot find the normcmp binary ({p} does not exist and none is on PATH): run "
               "`make` in the source tree or `make install`, or set $NORMCMP_BIN")


def analyse(model, inputs, out=None, tokens=4096, grad=False, loss=None, classes=(),
            only_classes=(), match=None, norm_kind=None, figures=("scatter-grid",),
            options=(), keep_dump=False, quiet=True):
    """Dumps the norms of `model` on `inputs` (as capture() does), runs
    `normcmp run` on them into `out` (default: a new temporary folder, which
    stays: see Analysis.cleanup) and returns an Analysis. figures: the
    figure kinds to draw (config "figures" types, e.g. "scatter-grid",
    "by-channel", "jacobian"; () for none); options: extra `normcmp run`
    options (["--sample-tokens", "4096"], ...); keep_dump: keep the dump
    (folder/dump.safetensors) after normcmp has read it."""
    nc = binary()
    folder = os.path.abspath(out) if out else tempfile.mkdtemp(prefix="normcmp-")
    work = tempfile.mkdtemp(prefix=".normcmp-dump-", dir=os.path.dirname(folder))
    try:
        dump_path = os.path.join(work, "dump.safetensors")
        config = os.path.join(work, "dump.json")
        _run_dump(model, inputs, dump_path, loss, quiet, tokens=tokens, grad=grad,
                  classes=classes, only_classes=only_classes, match=match, norm_kind=norm_kind,
                  dtype="keep", config=config)
        with open(config) as f:
            cfg = json.load(f)
        cfg["name"] = os.path.basename(folder)
        if figures:
            cfg["figures"] = [{"type": t} for t in figures]
        with open(config, "w") as f:
            json.dump(cfg, f, indent=2)
        p = subprocess.run([nc, "run", config, "--out", folder, "-q", *options],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise Fail(f"normcmp run failed (exit {p.returncode}): "
                       f"{p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}",
                       p.returncode)
        kept = None
        if keep_dump:
            kept = os.path.join(folder, "dump.safetensors")
            os.replace(dump_path, kept)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Analysis(folder, summary=p.stdout, dump=kept)


def _flat(d, prefix=""):
    """A nested dict as one level with dotted keys (lists kept)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


class Analysis:
    """The result of analyse() (or of Analysis(folder) on any normcmp output
    folder): report (report.json parsed), verdicts (one flat dict per layer:
    report.json's run.per_layer entries with nested keys dotted, e.g.
    "best_r2.fit"), run_verdict (the run's verdict line), figures (absolute
    paths of the figure files), folder, summary (what normcmp printed),
    dump (the kept dump or None)."""

    def __init__(self, folder, summary="", dump=None):
        self.folder = os.path.abspath(folder)
        path = os.path.join(self.folder, "report.json")
        try:
            with open(path) as f:
                self.report = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise Fail(f"{path}: cannot read the report ({e})")
        run = self.report.get("run") or {}
        self.verdicts = [_flat(L) for L in run.get("per_layer", [])]
        self.run_verdict = run.get("verdict")
        self.figures = [os.path.join(self.folder, o) for o in self.report.get("outputs", [])
                        if os.path.splitext(o)[1] in (".png", ".svg", ".pdf")]
        self.index_html = os.path.join(self.folder, "index.html")
        self.summary = summary
        self.dump = dump

    def __repr__(self):
        lines = [f"normcmp analysis of {len(self.verdicts)} layers in {self.folder}"]
        lines += [f"  {v.get('name')}: {v.get('verdict')}" for v in self.verdicts]
        if self.run_verdict:
            lines.append(f"  run: {self.run_verdict}")
        return "\n".join(lines)

    def _repr_html_(self):
        """A table of the per-layer verdicts, the run verdict and the PNG
        figures inline (what Jupyter shows for the object)."""
        esc = html.escape
        cols = [("name", "layer"), ("kind", "label"), ("residual_removed", "removed"),
                ("residual_removed_ci.ci95", "95 % interval"), ("best_r2.fit", "best R²"),
                ("slope_ratio.value", "slope / theory"), ("slope_ratio.ci95", "95 % interval"),
                ("alpha", "DyT α"), ("best_backprop.fit", "best backprop")]

        def fmt(v):
            if isinstance(v, float):
                return f"{v:.4g}"
            if isinstance(v, list) and all(isinstance(x, (int, float)) for x in v):
                return "[" + ", ".join(f"{x:.4g}" for x in v) + "]"
            return esc(str(v))
        rows = "".join("<tr>" + "".join(f"<td>{fmt(v.get(k, ''))}</td>" for k, _ in cols)
                       + "</tr>" for v in self.verdicts)
        out = [f"<div class='normcmp'><p><b>normcmp</b>: {len(self.verdicts)} layers, "
               f"<code>{esc(self.folder)}</code> (<a href='file://{esc(self.index_html)}'>"
               "index.html</a>)</p>",
               "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for _, h in cols) + "</tr>" + rows
               + "</table>"]
        if self.run_verdict:
            out.append(f"<p>{esc(self.run_verdict)}</p>")
        for fig in self.figures:
            if fig.endswith(".png") and os.path.isfile(fig):
                with open(fig, "rb") as f:
                    b64 = base64.b64encode(f.read()).decode("ascii")
                out.append(f"<figure><img src='data:image/png;base64,{b64}' "
                           f"alt='{esc(os.path.basename(fig))}'/><figcaption>"
                           f"{esc(os.path.basename(fig))}</figcaption></figure>")
        out.append("</div>")
        return "\n".join(out)

    def display(self):
        """Shows the object with IPython.display where IPython exists, else
        prints its text form."""
        try:
            from IPython.display import HTML, display
        except ImportError:
            print(repr(self))
            return
        display(HTML(self._repr_html_()))

    def cleanup(self):
        """Removes the output folder (a temporary one, say)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def swap(model, inputs, results, loss=None, labels=None, batch_size=1, surrogates=None,
         match=None, out=None, quiet=True):
    """The swap test (docs/swap.md) on a model object: results is normcmp's
    output folder (an Analysis or its folder) holding report.json and the
    dropin_*.safetensors files; loss a callable loss(output, inputs) ->
    scalar (labels= too when it names it), or None with labels (a 1-D
    tensor of class ids: the cross-entropy and the accuracy). Returns the
    results as a dict (the results file's content) and writes it to `out`
    when given."""
    from . import swaptest as S
    torch, np = _torch()
    folder = results.folder if isinstance(results, Analysis) else results
    argv = [folder, "--batch-size", str(int(batch_size)), "-q"]
    argv += ["--surrogate", ",".join(surrogates)] if surrogates else []
    argv += ["--match", match] if match else []
    a = S.parse_args(argv, PROG, need_model=False)
    a.loss = loss
    if loss is None and labels is None:
        raise Fail("give loss= (a callable) or labels= (class ids)")
    args, kwargs = _inputs(inputs, torch)
    layers, dump = S.read_report(folder)
    dropins = S.read_dropins(folder, a.surrogate, np)
    model.eval()
    res, _ = S.measure(a, model, isinstance(model, torch.jit.ScriptModule), args, kwargs,
                       "given (Python)", layers, dump, dropins, Log(PROG, quiet=quiet), torch, np,
                       "normcmp.swap (Python)", labels=labels)
    if out:
        S.write_json(out, res)
    return res
