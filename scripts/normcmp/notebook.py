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
import contextlib
import html
import json
import os
import shutil
import stat
import subprocess
import tempfile

from . import outputs, safetensors
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
    made = out is None or not os.path.lexists(out)
    folder = os.path.abspath(out) if out else tempfile.mkdtemp(prefix="normcmp-")
    kept = os.path.join(folder, "dump.safetensors") if keep_dump else None
    try:
        if kept and os.path.isdir(folder):  # refused now, not after the analysis
            outputs.check_target(kept, "keep_dump")
        with _work_dir(folder) as work:
            dump_path = os.path.join(work, "dump.safetensors")
            caps, _, _ = _run_dump(model, inputs, dump_path, loss, quiet, tokens=tokens,
                                   grad=grad, classes=classes, only_classes=only_classes,
                                   match=match, norm_kind=norm_kind, dtype="keep", config=None)
            cfg = _dump_config(dump_path, os.path.basename(folder), caps)
            if figures:
                cfg["figures"] = [{"type": t} for t in figures]
            config = os.path.join(work, "dump.json")
            with outputs.create(config, text=True) as f:
                json.dump(cfg, f, indent=2)
            p = subprocess.run([nc, "run", config, "--out", folder, "-q", *options],
                               capture_output=True, text=True)
            if p.returncode != 0:
                raise Fail(f"normcmp run failed (exit {p.returncode}): "
                           f"{p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}",
                           p.returncode)
            if kept:
                with outputs.Writer(dump_tool()) as w:
                    outputs.adopt(dump_path, w.file(kept, "keep_dump"))
                    w.commit()
    except BaseException:
        if made:  # a folder this call made, when nothing is in it
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise
    return Analysis(folder, summary=p.stdout, dump=kept, made=made)


def dump_tool():
    from . import dump
    return dump.TOOL


def _dump_config(dump_path, name, caps):
    from . import dump
    return dump.config_dict(dump_path, os.path.dirname(dump_path), name, caps)


@contextlib.contextmanager
def _work_dir(folder):
    """A private folder (mkdtemp: exclusive, mode 0700) for the dump normcmp
    reads: beside the output folder (the same file system, for keep_dump),
    else in the system's temporary folder; removed with all in it after."""
    try:
        work = tempfile.mkdtemp(prefix=".normcmp-work-", dir=os.path.dirname(folder))
    except OSError:
        work = tempfile.mkdtemp(prefix="normcmp-work-")
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


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

    def __init__(self, folder, summary="", dump=None, made=False):
        self.folder = os.path.abspath(folder)
        self.made = made  # analyse() made the folder: cleanup() removes it when empty
        path = os.path.join(self.folder, "report.json")
        self.report = outputs.read_json(path, 1 << 30, "normcmp's report.json")
        if not isinstance(self.report, dict):
            raise Fail(f"{path}: expected a JSON object (normcmp's report)")
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
        """Removes what normcmp wrote here and nothing else: report.json and
        the files its `outputs` lists (when its tool is normcmp), the kept
        dump (when the scripts' manifest lists it as it is), and the folder
        itself when analyse() made it and nothing else is left in it.
        Returns the paths removed."""
        gone = []
        try:
            rep = outputs.read_json(os.path.join(self.folder, "report.json"), 1 << 30, "report")
        except Fail:
            rep = None
        tool = rep.get("tool") if isinstance(rep, dict) else None
        if isinstance(tool, dict) and tool.get("name") == "normcmp":
            names = [o for o in rep.get("outputs") or [] if isinstance(o, str) and o
                     and "/" not in o and o not in (".", "..")] + ["report.json"]
            for name in names:
                path = os.path.join(self.folder, name)
                st = outputs.lstat(path)
                if st is not None and stat.S_ISREG(st.st_mode):
                    os.unlink(path)
                    gone.append(path)
        if self.dump and outputs.remove_owned(self.folder, os.path.basename(self.dump)):
            gone.append(self.dump)
        if self.made:
            with contextlib.suppress(OSError):
                os.rmdir(self.folder)
                gone.append(self.folder)
        return gone


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
    log = Log(PROG, quiet=quiet)
    planned = S.plan_output(a, out, log) if out else None  # refused now, not after the test
    try:
        model.eval()
        res, _ = S.measure(a, model, isinstance(model, torch.jit.ScriptModule), args, kwargs,
                           "given (Python)", layers, dump, dropins, log, torch, np,
                           "normcmp.swap (Python)", labels=labels)
        if planned:
            S.write_json(planned, res)
    finally:
        if planned:
            planned[0].abort()
    return res
