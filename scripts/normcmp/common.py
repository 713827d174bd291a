"""Helpers shared by the dump script, the swap test and the notebook module:
one-line errors, stderr logging, where the project's files are (source tree
or installed), importing a MODULE:CALLABLE, and finding an interpreter that
has PyTorch.

Nothing here imports torch or numpy at import time: `--help` and the
interpreter check must work under a python3 that has neither.
"""
import importlib
import importlib.util
import inspect
import os
import re
import signal
import subprocess
import sys

PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class Fail(Exception):
    """A one-line error: message and exit status (2: the user must fix
    something; 1: anything else)."""

    def __init__(self, msg, code=2):
        super().__init__(msg)
        self.code = code


def is_tty():
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Log:
    """Progress on stderr only when it is a terminal; warnings unless quiet;
    notes (what a user rarely needs: the interpreter chosen, ...) only when
    verbose."""

    def __init__(self, prog, quiet=False, verbose=False):
        self.prog = prog
        self.quiet = quiet
        self.verbose = verbose and not quiet
        self.progress_on = not quiet and is_tty()

    def progress(self, msg):
        if self.progress_on:
            print(f"{self.prog}: {msg}", file=sys.stderr, flush=True)

    def warn(self, msg):
        if not self.quiet:
            print(f"{self.prog}: warning: {msg}", file=sys.stderr, flush=True)

    def note(self, msg):
        if self.verbose:
            print(f"{self.prog}: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ where things are

def _installed():
    """The relative paths `make install` records beside the installed
    package (normcmp/_installed.py), or None in the source tree."""
    try:
        from . import _installed as inst  # written by make install only
    except ImportError:
        return None
    return inst


def paths():
    """{"helpers": folder of example_model.py and llama2c_model.py,
    "models": folder of the shipped checkpoints, "bin": the normcmp binary
    (may not exist yet in a source tree that was not built),
    "installed": bool}."""
    inst = _installed()
    if inst is not None:
        at = lambda rel: os.path.normpath(os.path.join(PKG_DIR, rel))  # noqa: E731
        return {"helpers": at(inst.DATADIR), "models": at(os.path.join(inst.DATADIR, "models")),
                "bin": at(os.path.join(inst.BINDIR, "normcmp")), "installed": True}
    scripts = os.path.dirname(PKG_DIR)
    top = os.path.dirname(scripts)
    build = os.environ.get("BUILD", "build")
    return {"helpers": scripts, "models": os.path.join(top, "data", "models"),
            "bin": os.path.join(top, build, "normcmp"), "installed": False}


def shown_paths():
    """The helper and model folders as help texts show them: relative to
    the project root in a source tree (where the commands are typed), the
    absolute installed folders otherwise."""
    p = paths()
    if not p["installed"]:
        return {"helpers": "scripts", "models": "data/models"}
    return {"helpers": p["helpers"], "models": p["models"]}


# ------------------------------------------------------------------ small helpers

def one_line(e):
    """The informative line of an exception's message: the first, or for
    TorchScript's multi-line tracebacks the last that names an error."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    if len(lines) > 1 and "TorchScript" in lines[0]:
        named = [ln for ln in lines if re.match(r"^[A-Za-z_.]*(Error|Exception):", ln)]
        return named[-1] if named else lines[-1]
    return lines[0]


def fmt_kw(kw):
    return ", ".join(f"{k}={v!r}" for k, v in kw.items())


def accepts(fn, name):
    """Whether fn names a parameter `name` (a **kwargs catch-all does not count)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    p = sig.parameters.get(name)
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def positional_count(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    n = 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return 99
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


def _module_file(mod_name, what):
    """The .py file a MODULE part names: the path as given, else (a bare
    file name) the same name among the helper modules (example_model.py,
    llama2c_model.py), so that an installed normcmp-dump finds its own."""
    path = os.path.abspath(mod_name)
    if os.path.isfile(path):
        return path
    if os.sep not in mod_name:
        helper = os.path.join(paths()["helpers"], mod_name)
        if os.path.isfile(helper):
            return helper
    raise Fail(f"--{what}: {mod_name}: no such file")


def load_callable(spec, what):
    """package.module:callable or path/to/file.py:callable -> (the object,
    its module). A bare helper name (llama2c_model.py:load, or the dotted
    llama2c_model:load) is also looked up among the helper modules."""
    mod_name, sep, attr = spec.rpartition(":")
    if not sep or not mod_name or not attr:
        raise Fail(f"--{what}: expected MODULE:CALLABLE, got {spec!r}")
    try:
        if mod_name.endswith(".py") or os.sep in mod_name:
            path = _module_file(mod_name, what)
            name = "_dump_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
            # its folder first on sys.path, so that it can import its siblings
            if os.path.dirname(path) not in sys.path:
                sys.path.insert(0, os.path.dirname(path))
            if name in sys.modules:
                mod = sys.modules[name]
            else:
                sp = importlib.util.spec_from_file_location(name, path)
                mod = importlib.util.module_from_spec(sp)
                sys.modules[name] = mod
                sp.loader.exec_module(mod)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            helpers = paths()["helpers"]
            if helpers not in sys.path:
                sys.path.append(helpers)  # last: the user's modules win
            mod = importlib.import_module(mod_name)
    except Fail:
        raise
    except BaseException as e:  # noqa: B902 - a failing import can raise anything
        if isinstance(e, KeyboardInterrupt):
            raise
        raise Fail(f"--{what}: cannot import {mod_name}: {type(e).__name__}: {one_line(e)}")
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise Fail(f"--{what}: {mod_name} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise Fail(f"--{what}: {spec} is not callable")
    return obj, mod


# ------------------------------------------------------------------ interpreter

def import_torch(argv, script, log):
    """(torch, numpy), or re-executes `script` with argv under the
    interpreter that has them (Debian's /usr/bin/python3 with python3-torch,
    or $NORMCMP_TORCH_PYTHON; said with --verbose), or fails saying what to
    install and how."""
    try:
        import numpy as np
        import torch
        return torch, np
    except ImportError as e:
        missing = one_line(e)
    other = os.environ.get("NORMCMP_TORCH_PYTHON", "/usr/bin/python3")
    tried = os.environ.get("NORMCMP_DUMP_REEXEC")
    if not tried and other and os.access(other, os.X_OK):
        try:
            ok = subprocess.run([other, "-c", "import torch, numpy"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=300).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            env = dict(os.environ, NORMCMP_DUMP_REEXEC=sys.executable or "python3")
            env.pop("PYTHONHOME", None)
            log.note(f"{sys.executable} cannot import PyTorch and NumPy ({missing}); "
                     f"running under {other}, which can")
            sys.stdout.flush()
            os.execve(other, [other, os.path.abspath(script)] + list(argv), env)
    where = f"{sys.executable}" + (f" (and {other})" if other and other != sys.executable else "")
    if tried:
        where = f"{tried} and {sys.executable}"
    raise Fail(f"needs PyTorch and NumPy, which {where} cannot import ({missing}). Install them: "
               "on Debian/Ubuntu `sudo apt-get install python3-torch python3-numpy` (or "
               "`scripts/deps.sh test`) and run with /usr/bin/python3; elsewhere "
               "`python3 -m pip install torch numpy`")


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, so that its clean-up
    (the staging folders and locks of normcmp/outputs.py) runs as for ^C."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _terminated(signum, _frame):
    raise Terminated(signum)


def run_main(main, prog):
    """Runs main() as a command: a Fail is one line on stderr and its exit
    status; ^C exits 130, SIGTERM 143 and SIGHUP 129, after the clean-up."""
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _terminated)
    try:
        sys.exit(main())
    except Fail as e:
        print(f"{prog}: {e}", file=sys.stderr)
        sys.exit(e.code)
    except KeyboardInterrupt as e:
        n = getattr(e, "signum", signal.SIGINT)
        print(f"{prog}: {'interrupted' if n == signal.SIGINT else signal.Signals(n).name}",
              file=sys.stderr)
        sys.exit(128 + n)
