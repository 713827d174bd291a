"""The dump script, the swap test and the notebook module on hostile names,
folders and results files (issue 24 items 1, 2, 3 and 9; the module they
write through is tested alone in test_outputs_py.py). A model whose norms
are named ln\\back, ln[0], ln0, x*y, xzy, q?, a and a.input (a norm inside
norm a) is dumped, fitted and swapped:

- item 9: the dump's config runs (`normcmp run`), one layer per module, in
  order, each its own module's;
- item 1: -o naming a Hugging Face checkpoint folder, a user's
  .safetensors file, or --config naming a user's JSON is refused (exit 2)
  and every file is kept, and nothing else is written; a dump of the
  script's own (file or folder) is replaced; two dumps into one target at
  once: the second fails at once (exit 1) naming the first; ^C during the
  capture (exit 130) and SIGKILL leave the earlier dump whole, and the
  next dump removes the staging folder the killed one left;
- item 3: the swap test's -o naming the report.json it reads, a FIFO, a
  device node, a link is refused (exit 2) before anything is measured,
  each left as it was; a link planted at the temporary name the old code
  used ({out}.tmp{pid}) is not followed; hostile results folders
  (report.json a FIFO, a link to /dev/zero, nested 100000 deep, not UTF-8,
  duplicate keys, "config" not an object; a drop-in file a FIFO, with
  duplicate tensors or NaN in its header) give one line naming the file,
  exit 2, no hang and no traceback;
- item 2: normcmp.analyse(out=folder) then cleanup() removes what normcmp
  wrote and the kept dump, never the folder's other files (also with
  out="."), and the folder only when analyse made it; a failed analyse()
  leaves no temporary folder; keep_dump refuses a user's dump.safetensors
  before the analysis.
"""
import contextlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import NC, TOP, Checker  # noqa: E402

sys.path.insert(0, os.path.join(TOP, "scripts"))

C = Checker("test_scripts_hostile")
PY = sys.executable or "/usr/bin/python3"
SCRIPTS = os.path.join(TOP, "scripts")
NAMES = ["ln\\back", "ln[0]", "ln0", "x*y", "xzy", "q?", "a", "a.input"]

MODEL = r'''
import os, time
import torch
from torch import nn

NAMES = ["ln\\back", "ln[0]", "ln0", "x*y", "xzy", "q?"]

class Model(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        torch.manual_seed(0)
        for n in NAMES:
            self.add_module(n, nn.LayerNorm(d))
        self.a = nn.LayerNorm(d)
        self.a.add_module("input", nn.LayerNorm(d))   # the module "a.input"
        self.inner = self.a.input                     # (named a.input: the first name wins)
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        for k, n in enumerate(NAMES):
            x = x + self.lin(getattr(self, n)(x))
            if k == 2 and os.environ.get("SLOW_MODEL"):
                print("in forward", flush=True)
                time.sleep(600)
        return self.inner(self.a(x))

def build():
    return Model().eval()

def example_inputs(model):
    return torch.randn(2, 16, 8, generator=torch.Generator().manual_seed(1)) * 3

def loss(out, inputs):
    return out.float().pow(2).mean()
'''


class Ran:
    def __init__(self, rc, err):
        self.returncode, self.stderr = rc, err


def inproc(mod, argv):
    """A script's main() in this process (one torch import for all runs)."""
    from normcmp.common import Fail
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = mod.main(argv, prog=mod.__name__.rsplit(".", 1)[1])
        except Fail as e:
            print(f"{e}", file=err)
            rc = e.code
    return Ran(rc, err.getvalue().strip())


def dump(tmp, *args):
    from normcmp import dump as D
    return inproc(D, ["--model", os.path.join(tmp, "hmodel.py") + ":build", "-q", *args])


def swap(tmp, results, *args):
    from normcmp import swaptest as S
    return inproc(S, [results, "--model", os.path.join(tmp, "hmodel.py") + ":build",
                      "--loss", os.path.join(tmp, "hmodel.py") + ":loss", "-q", *args])


def tree(path):
    """{relative path: bytes or 'dir'} of everything under path."""
    out = {}
    for root, dirs, files in os.walk(path):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), path)] = "dir"
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                out[os.path.relpath(os.path.join(root, f), path)] = fh.read()
    return out


def read(path):
    with open(path, "rb") as f:
        return f.read()


def leftovers(folder):
    return sorted(n for n in os.listdir(folder) if ".tmp." in n or n.endswith(".lock"))


def refused(p, what, *words):
    lines = p.stderr.splitlines()
    C.ok(p.returncode == 2 and len(lines) == 1 and all(w in p.stderr for w in words),
         f"{what}: exit {p.returncode} (expected 2), one line naming {words}: {p.stderr!r}")


def item9_config_runs(tmp):
    h = os.path.join(tmp, "h.safetensors")
    p = dump(tmp, "-o", h)
    C.ok(p.returncode == 0, f"dump of the hostile names: {p.stderr}")
    with open(os.path.join(tmp, "h.json")) as f:
        cfg = json.load(f)
    C.ok([L["tensor"] for L in cfg["layers"]] == ["ln\\\\back.input", "ln\\[0].input", "ln0.input",
                                                 "x\\*y.input", "xzy.input", "q\\?.input",
                                                 "a.input", "a.input.input"],
         f"the config names each input exactly, escaped: {[L['tensor'] for L in cfg['layers']]}")
    r = subprocess.run([NC, "run", os.path.join(tmp, "h.json"), "--out", os.path.join(tmp, "R"),
                        "-q", "--bootstrap", "0"], capture_output=True, text=True)
    C.ok(r.returncode == 0, f"normcmp run on the dump's config: {r.stderr.strip()[-300:]}")
    if r.returncode == 0:
        rep = json.loads(read(os.path.join(tmp, "R", "report.json")))
        got = [L["name"] for L in rep["layers"]]
        C.ok(got == NAMES, f"one layer per module, in order: {got}")
        tens = [i["tensor"] for L in rep["layers"] for i in L.get("inputs", [])
                if i.get("role", "input") == "input"] if rep["layers"] and "inputs" in \
            rep["layers"][0] else None
        C.ok(tens is None or tens == [n + ".input" for n in NAMES], f"each its own input: {tens}")


def item1_dump_targets(tmp):
    hf = os.path.join(tmp, "hf")
    os.makedirs(os.path.join(hf, "onnx"))
    for n, text in (("model.safetensors.index.json", '{"metadata": {}, "weight_map": {}}'),
                    ("config.json", "{}"), ("tokenizer.json", "{}"),
                    ("model-00001-of-00001.safetensors", "weights"), ("onnx/model.onnx", "o")):
        with open(os.path.join(hf, n), "w") as f:
            f.write(text)
    before = tree(hf)
    refused(dump(tmp, "-o", hf), "-o a Hugging Face checkpoint folder",
            "holds", "did not write")
    C.ok(tree(hf) == before and not os.path.exists(hf + ".json"),
         "the checkpoint folder kept, every file and sub-folder; no config written")
    mine = os.path.join(tmp, "mine.safetensors")
    with open(mine, "wb") as f:
        f.write(b"the user's own activations")
    refused(dump(tmp, "-o", mine), "-o a user's .safetensors file", "not written by")
    C.ok(read(mine) == b"the user's own activations" and not os.path.exists(
        os.path.join(tmp, "mine.json")), "the user's file kept, no config written")
    user_cfg = os.path.join(tmp, "user.json")
    with open(user_cfg, "w") as f:
        f.write('{"name": "mine"}')
    new = os.path.join(tmp, "new.safetensors")
    refused(dump(tmp, "-o", new, "--config", user_cfg), "--config a user's JSON", "not written by")
    C.ok(read(user_cfg) == b'{"name": "mine"}' and not os.path.exists(new),
         "the user's config kept, and the dump not written either")
    # the script's own dumps are replaced
    p1 = dump(tmp, "-o", new, "--tokens", "8")
    p2 = dump(tmp, "-o", new, "--tokens", "4")
    from normcmp import safetensors
    import numpy as np
    t, _ = safetensors.read(new, np)
    C.ok(p1.returncode == 0 and p2.returncode == 0 and t["ln0.input"].shape == (4, 8),
         f"a dump of the script's own replaced: {p1.stderr} {p2.stderr}")
    folder = os.path.join(tmp, "shards")
    p1 = dump(tmp, "-o", folder)
    p2 = dump(tmp, "-o", folder, "--match", "^ln")
    C.ok(p1.returncode == 0 and p2.returncode == 0
         and len([n for n in os.listdir(folder) if n.endswith(".safetensors")]) == 3,
         f"a folder of the script's own replaced, its extra shards gone: {os.listdir(folder)}")
    C.ok(not leftovers(tmp), f"nothing left beside them: {leftovers(tmp)}")


def slow_child(tmp, out):
    env = dict(os.environ, SLOW_MODEL="1")
    p = subprocess.Popen([PY, os.path.join(SCRIPTS, "dump_activations.py"), "--model",
                          os.path.join(tmp, "hmodel.py") + ":build", "-o", out, "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    return p, line.strip() == "in forward"


def item1_processes(tmp):
    out = os.path.join(tmp, "c.safetensors")
    dump(tmp, "-o", out)
    old = read(out)
    child, ok = slow_child(tmp, out)
    stages = [n for n in os.listdir(tmp) if n.startswith(".c.safetensors.tmp.")]
    spool = os.listdir(os.path.join(tmp, stages[0])) if len(stages) == 1 else []
    C.ok(ok and len(stages) == 1 and any(n.startswith("spool-") for n in spool),
         f"mid-capture: the rows spool into the staging folder beside the output ({stages}, "
         f"{spool})")
    p = dump(tmp, "-o", out)
    C.ok(p.returncode == 1 and f"in use by another normcmp run (process {child.pid}" in p.stderr,
         f"a second dump into the same target fails at once: {p.returncode} {p.stderr}")
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=300)
    C.ok(child.returncode == 130 and read(out) == old and not leftovers(tmp),
         f"^C mid-capture: exit {child.returncode}, the earlier dump whole, left {leftovers(tmp)} "
         f"{err.strip()[-200:]}")
    child, ok = slow_child(tmp, out)
    child.kill()
    child.wait()
    C.ok(ok and read(out) == old and len(leftovers(tmp)) == 4,
         f"SIGKILL mid-capture: the earlier dump whole, the locks and staging folders of the dump "
         f"and its config left ({leftovers(tmp)})")
    p = dump(tmp, "-o", out)
    C.ok(p.returncode == 0 and not leftovers(tmp),
         f"the next dump removes what the killed one left: {p.stderr} {leftovers(tmp)}")


FLAT = "^(ln|x|q)"  # the norms that hold no norm


def item3_swap_targets(tmp):
    R = os.path.join(tmp, "RS")  # the drop-ins of `normcmp fit` on the dump of item 9
    r = subprocess.run([NC, "fit", os.path.join(tmp, "h.safetensors"), "--out", R, "-q",
                        "--bootstrap", "0", "--no-jacobian"], capture_output=True, text=True)
    C.ok(r.returncode == 0, f"normcmp fit on the dump: {r.stderr.strip()[-300:]}")
    rep = read(os.path.join(R, "report.json"))
    p = swap(tmp, R, "-o", os.path.join(R, "report.json"), "--match", FLAT)
    refused(p, "-o the report.json it reads", "is an input of this run")
    C.ok(read(os.path.join(R, "report.json")) == rep, "report.json kept")
    fifo = os.path.join(tmp, "fifo.json")
    os.mkfifo(fifo)
    refused(swap(tmp, R, "-o", fifo, "--match", FLAT), "-o a FIFO", "a FIFO")
    C.ok(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO kept")
    try:
        dev = os.path.join(tmp, "null")
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        refused(swap(tmp, R, "-o", dev, "--match", FLAT), "-o a device node",
                "character device")
        C.ok(stat.S_ISCHR(os.lstat(dev).st_mode), "the device node kept")
    except PermissionError:
        print("test_scripts_hostile: not root: the device-node case is left out", file=sys.stderr)
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("victim")
    link = os.path.join(tmp, "link.json")
    os.symlink(victim, link)
    refused(swap(tmp, R, "-o", link, "--match", FLAT), "-o a link", "symbolic link")
    C.ok(os.path.islink(link) and read(victim) == b"victim", "the link and its target kept")
    out = os.path.join(tmp, "s.json")
    os.symlink(victim, f"{out}.tmp{os.getpid()}")  # the old code's predictable temporary
    p = swap(tmp, R, "-o", out, "--match", FLAT)
    C.ok(p.returncode == 0 and read(victim) == b"victim"
         and json.loads(read(out))["format"] == "normcmp swap test",
         f"a link at a guessable temporary name is not followed: {p.stderr}")
    p = swap(tmp, R, "-o", out)
    C.ok(p.returncode == 0 and len(json.loads(read(out))["layers"]) == 8,
         f"every layer, the norm inside a norm (a.input in a) with its parent: {p.stderr}")
    p = swap(tmp, R, "-o", out, "--match", "^ln")
    C.ok(p.returncode == 0 and len(json.loads(read(out))["layers"]) == 3,
         f"the swap test's own results replaced: {p.stderr}")


HOSTILE_RESULTS = r'''
import json, os, struct, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from normcmp import swaptest as S
from normcmp.common import Fail
tmp = sys.argv[2]
good = open(os.path.join(sys.argv[3], "report.json"), "rb").read()

def case(label, report=None, dropin=None, make=None):
    if label != sys.argv[4]:
        return
    d = os.path.join(tmp, label)
    os.mkdir(d)
    if make:
        make(d)
    if report is not None:
        open(os.path.join(d, "report.json"), "wb").write(report)
    if dropin is not None:
        open(os.path.join(d, "dropin_dyt.safetensors"), "wb").write(dropin)
    try:
        S.read_report(d)
        S.read_dropins(d, ["dyt"], np)
        print(json.dumps([label, 0, ""]))
    except Fail as e:
        print(json.dumps([label, e.code, str(e)]))
    except Exception as e:
        print(json.dumps([label, 99, f"{type(e).__name__}: {e}"]))
    sys.stdout.flush()

def st(header):
    h = header.encode()
    return struct.pack("<Q", len(h)) + h

case("report-fifo", make=lambda d: os.mkfifo(os.path.join(d, "report.json")))
case("report-zero", make=lambda d: os.symlink("/dev/zero", os.path.join(d, "report.json")))
case("report-deep", report=b"[" * 100000 + b"]" * 100000)
case("report-utf8", report=b'{"layers": [{"name": "\xff"}]}')
case("report-dups", report=b'{"layers": [{"name": "a"}], "layers": []}')
case("report-config", report=b'{"layers": [{"name": "a"}], "config": [1]}',
     dropin=st('{"a.alpha": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}') + b"\0" * 4)
case("dropin-fifo", report=good,
     make=lambda d: os.mkfifo(os.path.join(d, "dropin_dyt.safetensors")))
case("dropin-dups", report=good, dropin=st('{"a.alpha": {"dtype": "F32", "shape": [1], '
     '"data_offsets": [0, 4]}, "a.alpha": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}')
     + b"\0" * 4)
case("dropin-nan", report=good, dropin=st('{"__metadata__": {"x": NaN}}'))
'''


def limited():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # a reader without bound stops


def item3_results_files(tmp):
    """Each case in a child of its own, given 60 s and 2 GB: a reader that
    blocks or reads without end fails its case only."""
    want = {"report-fifo": "a FIFO", "report-zero": "a character device",
            "report-deep": "nested too deeply", "report-utf8": "not UTF-8",
            "report-dups": "duplicate key", "report-config": "",
            "dropin-fifo": "not a regular file", "dropin-dups": "duplicate key",
            "dropin-nan": "NaN"}
    for label, words in want.items():
        try:
            p = subprocess.run([PY, "-c", HOSTILE_RESULTS, SCRIPTS, tmp, os.path.join(tmp, "RS"),
                                label], capture_output=True, text=True, timeout=60,
                               preexec_fn=limited)
            g = json.loads(p.stdout) if p.stdout.strip() else None
            err = p.stderr
        except subprocess.TimeoutExpired:
            g, err = None, "no answer in 60 s"
        if label == "report-config":  # a "config" that is no object is ignored, not a crash
            C.ok(g is not None and g[1] == 2 and "report.json" not in g[2],
                 f"{label}: read, the drop-in's problem reported: {g} {err[-200:]}")
            continue
        C.ok(g is not None and g[1] == 2 and words in g[2] and "\n" not in g[2],
             f"{label}: exit 2, one line naming {words!r}: {g} {err[-200:] if not g else ''}")


PLAIN = "^(ln0|xzy)$"  # the notebook's part is about folders, not names


def item2_notebook(tmp, torch):
    import normcmp
    sys.path.insert(0, tmp)
    import hmodel
    model, x = hmodel.build(), hmodel.example_inputs(None)
    proj = os.path.join(tmp, "proj")
    os.makedirs(os.path.join(proj, "src"))
    for n in ("notes.txt", "model.py", "src/train.py"):
        with open(os.path.join(proj, n), "w") as f:
            f.write(n)
    before = tree(proj)
    res = normcmp.analyse(model, x, match=PLAIN, out=proj, figures=(),
                          options=["--bootstrap", "0"])
    C.ok(os.path.isfile(os.path.join(proj, "report.json")), "analyse(out=proj) wrote its report")
    gone = res.cleanup() or []
    C.ok(tree(proj) == before, f"cleanup(): the user's folder as it was ({sorted(tree(proj))}, "
         f"removed {[os.path.relpath(g, proj) for g in gone]})")
    here = os.getcwd()
    work = os.path.join(tmp, "cwd")
    os.makedirs(work)
    with open(os.path.join(work, "model.py"), "w") as f:
        f.write("the user's model source")
    os.chdir(work)
    try:
        res = normcmp.analyse(model, x, match=PLAIN, out=".", figures=(),
                              options=["--bootstrap", "0"])
        res.cleanup()
    finally:
        os.chdir(here)
    left = os.listdir(work) if os.path.isdir(work) else "the folder removed"
    C.ok(left == ["model.py"], f"out='.': cleanup() leaves the working folder and its files: {left}")
    res = normcmp.analyse(model, x, match=PLAIN, keep_dump=True, figures=(),
                          options=["--bootstrap", "0"])
    C.ok(os.path.isfile(res.dump) and sorted(os.listdir(res.folder)) ==
         [".normcmp-scripts.json", "config.json", "dropin_dyisru.safetensors",
          "dropin_dyt.safetensors", "dropin_dyt_alpha0.safetensors", "dump.safetensors",
          "index.html", "report.json"], f"keep_dump: {sorted(os.listdir(res.folder))}")
    res.cleanup()
    C.ok(not os.path.exists(res.folder), "cleanup() of a temporary folder with a kept dump: gone")
    private = os.path.join(tmp, "private-tmp")
    os.mkdir(private)
    old, tempfile.tempdir = tempfile.tempdir, private
    try:
        from normcmp.common import Fail
        try:
            normcmp.analyse(model, x, match=PLAIN, figures=(), options=["--no-such-option"])
            failed = False
        except Fail:
            failed = True
    finally:
        tempfile.tempdir = old
    C.ok(failed and os.listdir(private) == [], f"a failed analyse() leaves no temporary folder: "
         f"{os.listdir(private)}")
    os.makedirs(proj, exist_ok=True)  # (an earlier cleanup() may have removed it)
    with open(os.path.join(proj, "dump.safetensors"), "w") as f:
        f.write("the user's dump")
    try:
        normcmp.analyse(model, x, match=PLAIN, out=proj, keep_dump=True, figures=())
        msg = ""
    except Fail as e:
        msg = str(e)
    C.ok("not written by normcmp's scripts" in msg and read(os.path.join(proj, "dump.safetensors"))
         == b"the user's dump" and not os.path.exists(os.path.join(proj, "report.json")),
         f"keep_dump over a user's dump.safetensors: refused before the analysis: {msg!r}")


def main():
    torch = C.torch()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "hmodel.py"), "w") as f:
            f.write(MODEL)
        for f, args in ((item9_config_runs, ()), (item1_dump_targets, ()),
                        (item1_processes, ()), (item3_swap_targets, ()),
                        (item3_results_files, ()), (item2_notebook, (torch,))):
            try:
                f(tmp, *args)
            except Exception as e:  # noqa: BLE001 - a crash is one failure; the rest still runs
                C.ok(False, f"{f.__name__}: {type(e).__name__}: {e}")
    C.done()


if __name__ == "__main__":
    main()
