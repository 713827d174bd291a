"""Test of scripts/dump_activations.py's sharded output and of normcmp
reading it as it comes, plus the dump script's dtypes, progress and
interpreter handling.

- A folder dump (one shard per module and model.safetensors.index.json)
  holds exactly the tensors, bytes and dtypes of the single-file dump of the
  same run; every shard carries the run's metadata and its module's norm
  and eps; the index names each tensor's shard and the total size.
- `normcmp fit DIR`, `fit DIR/model.safetensors.index.json` and
  `fit 'DIR/model-*.safetensors'`, and `normcmp run` on the config the
  script writes beside the folder, give the same layers and numbers
  (timings aside) as the single file.
- A bfloat16 model's tensors are written as bfloat16, bit for bit what
  forward hooks see here; --dtype f32 widens them exactly.
- Progress: one line per module on a terminal (a pty here), none on a pipe.
- Interpreter: under a python3 without PyTorch the script re-executes itself
  under one that has it ($NORMCMP_TORCH_PYTHON, default /usr/bin/python3),
  saying so only with -v; with none, it fails with one line saying what to
  install and how.
"""
import glob
import json
import os
import pty
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_dump as T  # noqa: E402
from common import NC, TOP, Checker  # noqa: E402

C = Checker("test_dump_shards")
T.C = C  # the shared helpers count here
DUMP, EXAMPLE, PY = T.DUMP, T.EXAMPLE, T.PY
WIDE = os.path.join(TOP, "tests", "ref", "wide_models.py")
INDEX = "model.safetensors.index.json"


def read_folder(folder):
    """(tensors, dtypes, {shard: metadata}, index) of a folder dump."""
    with open(os.path.join(folder, INDEX)) as f:
        ix = json.load(f)
    wm = ix["weight_map"]
    tensors, dtypes, metas, nbytes = {}, {}, {}, 0
    for s in sorted(set(wm.values())):
        t, d, m = T.read_safetensors(os.path.join(folder, s))
        C.ok(sorted(t) == sorted(k for k, v in wm.items() if v == s),
             f"{s}: holds the tensors the index names")
        tensors.update(t)
        dtypes.update(d)
        metas[s] = m
        nbytes += sum(v.size * {"F32": 4, "F16": 2, "BF16": 2}[d[k]] for k, v in t.items())
    C.ok(ix["metadata"]["total_size"] == nbytes, f"index total_size {ix['metadata']} = {nbytes}")
    return tensors, dtypes, metas, ix


def layers_of(report_path):
    """A report's layers without timings, and which tensors it read."""
    with open(report_path) as f:
        rep = json.load(f)

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("timing", "source")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(rep["layers"]), sorted((i["layer"], i["role"], i["tensor"])
                                         for i in rep["inputs"])


def fit(spec, out):
    p = subprocess.run([NC, "fit", spec, "--out", out, "--quiet"], capture_output=True, text=True)
    C.ok(p.returncode == 0, f"normcmp fit {spec}: {p.stderr.strip()}")
    return os.path.join(out, "report.json")


def sharded(tmp):
    mods = ["blocks.0.ln1", "blocks.0.ln2", "blocks.1.ln1", "blocks.1.ln2", "blocks.2.ln1",
            "blocks.2.ln2", "ln_f"]
    one = os.path.join(tmp, "one.safetensors")
    folder = os.path.join(tmp, "dumps", "rms")
    common = ["--model", f"{EXAMPLE}:tiny_rmsnorm", "--grad", "--tokens", "90"]
    T.dump(*common, "-o", one)
    p = T.dump(*common, "-o", folder + "/")
    C.ok("in 7 shards" in p.stdout, f"summary line: {p.stdout.strip()}")
    t1, d1, m1 = T.read_safetensors(one)
    ts, ds, metas, ix = read_folder(folder)
    C.ok(sorted(t1) == sorted(ts) and all(np.array_equal(t1[k], ts[k]) for k in t1),
         "folder dump: the same tensors and values as one file")
    C.ok(d1 == ds, "folder dump: the same dtypes")
    shards = sorted(metas)
    C.ok(shards == [f"model-{k:05d}-of-00007.safetensors" for k in range(1, 8)],
         f"shards named as Hugging Face names them: {shards[:2]}")
    for k, (s, m) in enumerate(sorted(metas.items())):
        mine = mods[k]
        C.ok(all(ix["weight_map"][f"{mine}.{r}"] == s for r in ("input", "output", "weight",
                                                                 "grad_output")),
             f"{s}: module {mine} and its companions")
        C.ok(all(m.get(key) == m1.get(key) for key in ("format", "tool", "modules", "dtype",
                                                      "capture", "loss")),
             f"{s}: the run's metadata")
        C.ok(all(m.get(f"{mine}.{key}") == m1[f"{mine}.{key}"]
                 for key in ("norm", "eps", "class", "check_max_abs_diff")),
             f"{s}: its module's norm, eps, class and check")
    C.ok(os.stat(folder).st_mode & 0o777 == 0o777 & ~current_umask(),
         "the folder has the umask's permissions")
    C.ok(not [n for n in os.listdir(os.path.dirname(folder))
              if n.startswith(".") and n != ".normcmp-scripts.json"],
         "no scratch folder left behind (only the scripts' manifest)")
    with open(os.path.join(tmp, "dumps", "rms.json")) as f:
        cfg = json.load(f)
    C.ok(cfg["name"] == "rms" and all(L["file"] == f"rms/{INDEX}" for L in cfg["layers"])
         and [L["tensor"] for L in cfg["layers"]] == [f"{m}.input" for m in mods]
         and all(L["norm"] == "rmsnorm" for L in cfg["layers"]),
         "config beside the folder: the index, one layer per module")

    # normcmp reads the folder, the index and a glob as the single file
    want = layers_of(fit(one, os.path.join(tmp, "r-one")))
    C.ok(len(want[0]) == 7 and len(want[1]) == 28, "single file: 7 layers, 28 tensors read")
    for k, spec in enumerate((folder, os.path.join(folder, INDEX),
                              os.path.join(folder, "model-*.safetensors"))):
        got = layers_of(fit(spec, os.path.join(tmp, f"r{k}")))
        C.ok(got == want, f"normcmp fit {os.path.relpath(spec, tmp)}: the same layers, "
                          "companions and numbers as one file")
        C.ok(all(L.get("norm") == "rmsnorm" and L.get("eps") == 1e-6
                 and L.get("norm_source") == "metadata" and L.get("eps_source") == "metadata"
                 for L in got[0]),
             f"normcmp fit {os.path.relpath(spec, tmp)}: norm and eps from the shards' metadata")
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([NC, "run", os.path.join(tmp, "dumps", "rms.json"), "--out", out,
                            "--quiet"], capture_output=True, text=True)
        C.ok(p.returncode == 0, f"normcmp run rms.json: {p.stderr.strip()}")
        if p.returncode == 0:
            got = layers_of(os.path.join(out, "report.json"))
            C.ok([L["name"] for L in got[0]] == mods
                 and all(L["real_output_check"]["max_abs_diff"] < 1e-5 for L in got[0]),
                 "normcmp run on the config: every module, real output checked")
            with open(os.path.join(out, "report.json")) as f:
                paths = {i["path"] for i in json.load(f)["inputs"]}
            C.ok(len(paths) == 7 and all("model-0000" in q for q in paths),
                 "report: each tensor read from its own shard")

    # writing again replaces a dump; a folder of other files is refused
    T.dump(*common[:2], "-o", folder, "--tokens", "20", "--config", "none")
    ts2, _, _, _ = read_folder(folder)
    C.ok(ts2["ln_f.input"].shape == (20, 48), "a second dump replaces the folder")
    other = os.path.join(tmp, "other")
    os.makedirs(other)
    open(os.path.join(other, "notes.txt"), "w").close()
    p = T.dump(*common[:2], "-o", other, expect=2)
    C.ok(p.stderr.strip() == f"dump_activations.py: --out: {other}: holds notes.txt, which "
         "normcmp's scripts did not write (expected a new or empty folder, or one the dump script "
         "wrote, with the manifest .normcmp-scripts.json listing its files); the folder is left "
         "as it is", f"a folder of other files: {p.stderr.strip()}")


def current_umask():
    u = os.umask(0o22)
    os.umask(u)
    return u


def keep_dtype(tmp, torch):
    """A bfloat16 model: tensors as captured, bit for bit."""
    sys.path.insert(0, os.path.dirname(WIDE))
    import wide_models as W
    kw = {"d": 64, "blocks": 2, "heads": 4, "hidden": 96, "vocab": 50, "tokens": 40,
          "dtype": "bfloat16"}
    out = os.path.join(tmp, "bf.safetensors")
    T.dump("--model", f"{WIDE}:llama_decoder", "--model-args", json.dumps(kw), "-o", out,
           "--grad")
    t, dts, meta = T.read_safetensors(out)
    C.ok(set(dts.values()) == {"BF16"}, f"bfloat16 model: every tensor BF16 ({set(dts.values())})")
    C.ok(meta.get("dtype") == "keep" and meta.get("norm.source_dtype") == "bfloat16",
         "metadata: dtype keep, source bfloat16")
    # the same run here, hooks of our own
    m = W.llama_decoder(**kw)
    seen = {}

    def hook(name):
        def f(mod, inp, outp):
            seen[name] = (inp[0].detach().float().reshape(-1, 64).double().numpy(),
                          outp.detach().float().reshape(-1, 64).double().numpy())
        return f
    for name, mod in m.named_modules():
        if type(mod).__name__ == "LlamaRMSNorm":
            mod.register_forward_hook(hook(name))
    with torch.no_grad():
        m(m.example_inputs())
    C.ok(sorted(seen) == sorted(json.loads(meta["modules"])), "the same modules hooked")
    C.ok(all(np.array_equal(seen[n][0], t[f"{n}.input"]) and
             np.array_equal(seen[n][1], t[f"{n}.output"]) for n in seen),
         "BF16 tensors: bit for bit what the hooks see")
    wide = os.path.join(tmp, "bf32.safetensors")
    T.dump("--model", f"{WIDE}:llama_decoder", "--model-args", json.dumps(kw), "-o", wide,
           "--dtype", "f32", "--config", "none")
    t2, d2, _ = T.read_safetensors(wide)
    C.ok(set(d2.values()) == {"F32"} and all(np.array_equal(t2[k], t[k]) for k in t2),
         "--dtype f32: the bfloat16 values widened exactly")
    T.check_report(os.path.join(tmp, "bf.json"), list(seen), "rmsnorm", 1e-6, True, tol=0.05,
                   label="bf16 llama")


def grad_slots(tmp, torch):
    """A module called twice: each call's gradient lands on its own rows
    (backward reaches the second call first), in a folder and in one file."""
    path = os.path.join(tmp, "odd_model.py")
    with open(path, "w") as f:
        f.write(T.ODD)
    sys.path.insert(0, tmp)
    import odd_model
    m = odd_model.odd()
    grads = []

    def hook(mod, inp, outp):
        outp.register_hook(lambda g: grads.append(g.detach().reshape(-1, 16).double().numpy()))
    m.shared.register_forward_hook(hook)
    x = odd_model.example_inputs(m)
    m(x).pow(2).sum().backward()
    want = np.concatenate(grads[::-1])  # reached in reverse order
    C.ok(want.shape == (60, 16), f"two calls of 30 rows ({want.shape})")
    for out in (os.path.join(tmp, "odd_sh"), os.path.join(tmp, "odd1.safetensors")):
        T.dump("--model", f"{path}:odd", "-o", out, "--grad", "--tokens", "60", "--config", "none",
               "-q")
        t = read_folder(out)[0] if not out.endswith(".safetensors") else T.read_safetensors(out)[0]
        err = float(np.abs(t["shared.grad_output"] - want).max() / np.abs(want).max())
        C.ok(err < 1e-6, f"{os.path.basename(out)}: shared.grad_output = both calls' autograd "
                         f"gradients in call order (rel {err:.3g})")


def progress(tmp):
    """One line per module on a terminal, nothing on a pipe."""
    args = [PY, DUMP, "--model", f"{EXAMPLE}:tiny_layernorm", "-o",
            os.path.join(tmp, "prog"), "--config", "none", "--tokens", "10"]
    master, slave = pty.openpty()
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=slave, cwd=TOP)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    err = b"".join(chunks).decode()
    lines = [ln for ln in err.splitlines() if "] blocks." in ln or "] ln_f" in ln]
    C.ok(p.returncode == 0 and len(lines) == 7 and "[1/7] blocks.0.ln1: 10 x 48 float32" in err,
         f"terminal: one progress line per module: {err[-300:]!r}")
    C.ok("shard 7/7" in err, "terminal: progress while writing the shards")
    q = subprocess.run(args, capture_output=True, text=True, cwd=TOP)
    C.ok(q.returncode == 0 and q.stderr == "", f"pipe: no progress ({q.stderr[:200]!r})")


def interpreter(tmp):
    """No PyTorch in this interpreter: re-executed, or told what to install."""
    out = os.path.join(tmp, "reexec.safetensors")
    args = [DUMP, "--model", f"{EXAMPLE}:tiny_layernorm", "-o", out, "--tokens", "12"]
    env = dict(os.environ)
    env.pop("NORMCMP_TORCH_PYTHON", None)
    # -S: no site-packages, so neither torch nor numpy imports here
    p = subprocess.run([PY, "-S", *args], capture_output=True, text=True, cwd=TOP, env=env)
    C.ok(p.returncode == 0 and os.path.isfile(out),
         f"python3 -S: re-executed under /usr/bin/python3: {p.stderr.strip()[-300:]}")
    C.ok(p.stderr == "", f"the re-execution is not said without -v: {p.stderr.strip()[:200]!r}")
    p = subprocess.run([PY, "-S", *args, "-v"], capture_output=True, text=True, cwd=TOP, env=env)
    C.ok(p.returncode == 0 and "cannot import PyTorch and NumPy" in p.stderr
         and "running under /usr/bin/python3" in p.stderr,
         f"with -v the re-execution is said: {p.stderr.strip()[:200]!r}")
    env["NORMCMP_TORCH_PYTHON"] = os.path.join(tmp, "no-such-python")
    p = subprocess.run([PY, "-S", *args[:-2], "-o", os.path.join(tmp, "none.safetensors")],
                       capture_output=True, text=True, cwd=TOP, env=env)
    C.ok(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
         and "sudo apt-get install python3-torch python3-numpy" in p.stderr
         and "scripts/deps.sh test" in p.stderr and "pip install torch numpy" in p.stderr,
         f"no interpreter with torch: one line, what to install: {p.stderr.strip()!r}")
    C.ok(not os.path.exists(os.path.join(tmp, "none.safetensors")), "nothing written")
    # the deps.sh group the hint names exists and installs python3-torch
    with open(os.path.join(TOP, "scripts", "deps.sh")) as f:
        deps = f.read()
    C.ok("test)" in deps and "python3-torch" in deps, "scripts/deps.sh test installs python3-torch")
    # --help needs no torch at all
    p = subprocess.run([PY, "-S", DUMP, "--help"], capture_output=True, text=True, env=env)
    C.ok(p.returncode == 0 and "--dtype" in p.stdout, "--help without torch")


def main():
    torch = C.torch()
    with tempfile.TemporaryDirectory() as tmp:
        sharded(tmp)
        keep_dtype(tmp, torch)
        grad_slots(tmp, torch)
        progress(tmp)
        interpreter(tmp)
        C.ok(not glob.glob(os.path.join(tmp, "**", ".*.tmp.*"), recursive=True),
             "no staging folder left behind")
    C.done()


if __name__ == "__main__":
    main()
