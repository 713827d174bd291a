"""The notebook module (scripts/normcmp: normcmp.capture, normcmp.analyse,
normcmp.swap) on the shipped models, from the source tree:

- `import normcmp` needs neither torch nor numpy (python3 -S).
- capture() on vit4mnist (TorchScript) and stories260K (PyTorch module)
  returns, in memory, exactly the tensors the dump script writes for the
  same model and inputs (one implementation), and each output is the
  module's LayerNorm / RMSNorm of its input recomputed in NumPy.
- analyse() on vit4mnist: the report it parses is report.json of its folder,
  its numbers equal those of the command-line path (dump script, then
  `normcmp run` on its config); verdicts are report.json's run.per_layer
  flattened (one dict per layer); the figures exist and are PNGs; the
  HTML rendering has a row per layer and the PNG inline, bit for bit; the
  dump is deleted unless keep_dump.
- swap() on vit4mnist with labels gives the swap script's numbers.
- binary(): $NORMCMP_BIN wins; a bad one is a one-line error.
"""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BUILD, TOP, Checker, layernorm, rmsnorm  # noqa: E402

C = Checker("test_notebook")
PY = sys.executable or "/usr/bin/python3"
SCRIPTS = os.path.join(TOP, "scripts")
MODELS = os.path.join(TOP, "data", "models")
DUMP = os.path.join(SCRIPTS, "dump_activations.py")
NC = os.path.join(TOP, BUILD, "normcmp")


def read_st(path):
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    meta = head.pop("__metadata__", {})
    return {k: np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], "<f4")
            .reshape(e["shape"]) for k, e in head.items()}, meta


def import_light():
    code = (f"import sys; sys.path.insert(0, {SCRIPTS!r}); import normcmp; "
            "print(sorted(normcmp.__all__), 'torch' in sys.modules, 'numpy' in sys.modules)")
    p = subprocess.run([PY, "-S", "-c", code], capture_output=True, text=True)
    C.ok(p.returncode == 0 and p.stdout.strip() == "['Analysis', 'Fail', 'analyse', 'binary', "
         "'capture', 'swap'] False False", f"import normcmp without torch: {p.stdout!r} "
                                            f"{p.stderr.strip()[-200:]}")


def same_as_dump(tmp, label, acts, dump_args):
    out = os.path.join(tmp, f"{label}.safetensors")
    p = subprocess.run([PY, DUMP, *dump_args, "-o", out, "-q", "--config", "none"],
                       capture_output=True, text=True, cwd=TOP)
    C.ok(p.returncode == 0, f"{label}: dump script: {p.stderr[-300:]}")
    t, meta = read_st(out)
    mods = json.loads(meta["modules"])
    C.ok(sorted(k for k in acts if k != "__metadata__") == sorted(mods),
         f"{label}: capture() has the dump's modules")
    for m in mods:
        for role in ("input", "output", "weight", "bias"):
            key = f"{m}.{role}"
            if key in t:
                C.ok(role in acts.get(m, {}) and np.array_equal(acts[m][role], t[key]),
                     f"{label} {key}: capture() = the dump script's tensor, bit for bit")
        kind, eps = acts["__metadata__"][f"{m}.norm"], float(acts["__metadata__"][f"{m}.eps"])
        x = acts[m]["input"].astype(np.float64)
        y = (layernorm if kind == "layernorm" else rmsnorm)(x, eps)[0]
        y = y * acts[m].get("weight", 1.0) + acts[m].get("bias", 0.0)
        C.ok(np.abs(y - acts[m]["output"]).max() < 1e-5, f"{label} {m}: output = {kind}(input)")


def captures(tmp, normcmp, torch):
    import example_model as E
    import llama2c_model as L
    sm = torch.jit.load(os.path.join(MODELS, "vit4mnist.ptl"))
    acts = normcmp.capture(sm, E.digit_images(4), tokens=0)
    C.ok(len(acts) == 13 and acts["ln00"]["input"].shape == (68, 64),
         f"vit4mnist: 12 layers of 68 tokens ({len(acts)}, {acts['ln00']['input'].shape})")
    same_as_dump(tmp, "vit", acts, ["--checkpoint", os.path.join(MODELS, "vit4mnist.ptl"),
                                    "--inputs", f"{SCRIPTS}/example_model.py:digit_images",
                                    "--inputs-args", '{"n": 4}', "--tokens", "0"])
    binf = os.path.join(MODELS, "stories260K.bin")
    model = L.load(binf)
    toks = L.example_inputs(model, batch=2, length=16)
    acts = normcmp.capture(model, toks, tokens=20)
    C.ok(len(acts) == 12 and acts["norm"]["input"].shape == (20, 64),
         "stories260K: 11 layers, --tokens 20")
    same_as_dump(tmp, "stories", acts, ["--model", f"{SCRIPTS}/llama2c_model.py:load",
                                        "--checkpoint", binf, "--inputs-args",
                                        '{"batch": 2, "length": 16}', "--tokens", "20"])


def analyses(tmp, normcmp, torch):
    import example_model as E
    ptl = os.path.join(MODELS, "vit4mnist.ptl")
    sm = torch.jit.load(ptl)
    folder = os.path.join(tmp, "nb-vit")
    res = normcmp.analyse(sm, E.digit_images(6), out=folder, options=["--threads", "1"])
    with open(os.path.join(folder, "report.json")) as f:
        rep = json.load(f)
    C.ok(res.report == rep and res.folder == folder, "analyse: report = its report.json")
    C.ok(not os.path.exists(os.path.join(folder, "dump.safetensors")) and res.dump is None
         and not [n for n in os.listdir(tmp) if n.startswith(".normcmp-dump-")],
         "analyse: the dump is gone, no scratch folder left")
    names = [f"ln{k:02d}" for k in range(12)]
    C.ok([v["name"] for v in res.verdicts] == names, "analyse: one verdict row per layer")
    per = rep["run"]["per_layer"]
    C.ok(all(v["verdict"] == p["verdict"] and v["best_r2.fit"] == p["best_r2"]["fit"]
             and v["alpha"] == p["alpha"] for v, p in zip(res.verdicts, per)),
         "analyse: verdicts = run.per_layer, flattened")
    C.ok(all(isinstance(v, dict) and not any(isinstance(x, dict) for x in v.values())
             for v in res.verdicts), "analyse: flat dicts (a table without pandas)")
    C.ok(res.run_verdict == rep["run"]["verdict"], "analyse: the run verdict")
    C.ok(len(res.figures) == 1 and res.figures[0].endswith(".png")
         and open(res.figures[0], "rb").read(8) == b"\x89PNG\r\n\x1a\n", "analyse: a PNG figure")
    # the command-line path on the same model and inputs
    cli = os.path.join(tmp, "cli.safetensors")
    subprocess.run([PY, DUMP, "--checkpoint", ptl, "--inputs",
                    f"{SCRIPTS}/example_model.py:digit_images", "--inputs-args", '{"n": 6}',
                    "-o", cli, "-q"], check=True, cwd=TOP, capture_output=True)
    subprocess.run([NC, "run", os.path.join(tmp, "cli.json"), "--out", os.path.join(tmp, "cli"),
                    "-q", "--threads", "1"], check=True, capture_output=True)
    with open(os.path.join(tmp, "cli", "report.json")) as f:
        ref = json.load(f)
    C.ok([L["fits"] for L in ref["layers"]] == [L["fits"] for L in rep["layers"]]
         and [L["input_stats"] for L in ref["layers"]] == [L["input_stats"] for L in rep["layers"]]
         and ref["run"]["per_layer"] == rep["run"]["per_layer"],
         "analyse: the same fits, statistics and verdicts as dump script + normcmp run")
    h = res._repr_html_()
    C.ok(h.count("<tr>") == 13, f"HTML: a header and 12 rows ({h.count('<tr>')})")
    m = re.search(r"data:image/png;base64,([A-Za-z0-9+/=]+)", h)
    C.ok(m is not None and base64.b64decode(m.group(1)) == open(res.figures[0], "rb").read(),
         "HTML: the figure inline, bit for bit")
    C.ok(all(v["verdict"] in repr(res) for v in res.verdicts), "repr: the verdict lines")
    res2 = normcmp.analyse(sm, E.digit_images(6), out=os.path.join(tmp, "nb2"), figures=(),
                           keep_dump=True, tokens=17)
    C.ok(res2.figures == [] and os.path.isfile(res2.dump)
         and all(L["tokens"] == 17 for L in res2.report["layers"]),
         "analyse: no figures, the dump kept, tokens passed on")
    return res


def swaps(tmp, normcmp, res, torch):
    import example_model as E
    import test_swap as TS
    TS.C = C
    ptl = os.path.join(MODELS, "vit4mnist.ptl")
    dump = os.path.join(tmp, "sw.safetensors")
    subprocess.run([PY, DUMP, "--checkpoint", ptl, "--inputs",
                    f"{SCRIPTS}/example_model.py:digit_images", "--inputs-args", '{"n": 6}',
                    "-o", dump, "-q", "--config", "none"], check=True, cwd=TOP,
                   capture_output=True)
    TS.fixture_dropins(res.folder, dump, TS.vit_roles)
    sm = torch.jit.load(ptl)
    got = normcmp.swap(sm, E.digit_images(6), res, labels=E.digit_labels(6), batch_size=2,
                       surrogates=["dyt"], match="^ln0[01]$")
    cli = os.path.join(tmp, "sw.json")
    p = subprocess.run([PY, os.path.join(SCRIPTS, "swap_test.py"), res.folder, "--checkpoint",
                        ptl, "--inputs", f"{SCRIPTS}/example_model.py:digit_images",
                        "--inputs-args", '{"n": 6}', "--labels",
                        f"{SCRIPTS}/example_model.py:digit_labels", "--batch-size", "2",
                        "--surrogate", "dyt", "--match", "^ln0[01]$", "-o", cli],
                       capture_output=True, text=True, cwd=TOP)
    C.ok(p.returncode == 0, f"swap script: {p.stderr[-300:]}")
    with open(cli) as f:
        want = json.load(f)
    strip = lambda r: {k: v for k, v in r.items() if k in ("original", "layers", "roles", "all")}  # noqa: E731
    C.ok(strip(got) == strip(want), "swap(): the swap script's numbers")
    C.ok(got["labels"] == "given" and got["model"] == "RecursiveScriptModule",
         f"swap(): labels given, the model's class ({got['labels']}, {got['model']})")


def binaries(normcmp):
    os.environ["NORMCMP_BIN"] = NC
    C.ok(normcmp.binary() == NC, "$NORMCMP_BIN wins")
    os.environ["NORMCMP_BIN"] = "/nonexistent/normcmp"
    try:
        normcmp.binary()
        C.ok(False, "a bad $NORMCMP_BIN fails")
    except normcmp.Fail as e:
        C.ok(str(e) == "$NORMCMP_BIN: /nonexistent/normcmp is not an executable file",
             f"a bad $NORMCMP_BIN: {e}")
    del os.environ["NORMCMP_BIN"]
    C.ok(normcmp.binary() == NC, "the source tree's build/normcmp")


def main():
    torch = C.torch()
    import_light()
    sys.path.insert(0, SCRIPTS)
    import normcmp
    os.environ.pop("NORMCMP_BIN", None)
    with tempfile.TemporaryDirectory() as tmp:
        captures(tmp, normcmp, torch)
        res = analyses(tmp, normcmp, torch)
        swaps(tmp, normcmp, res, torch)
        binaries(normcmp)
    C.done()


if __name__ == "__main__":
    main()
