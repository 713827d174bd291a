"""The dump script's choice of modules and what it says about it
(scripts/dump_activations.py, normcmp/dump.py):

- Norm-like modules no class pattern takes (four custom ScaleNorms) are
  listed in one warning line naming them and the --class option that takes
  them; a pre-norm wrapper (a module holding a norm), torch's BatchNorm1d and
  GroupNorm are not; -q silences it; with --only-class, or outside --match,
  nothing is listed.
- --class adds to the default classes (LayerNorms and ScaleNorms hooked);
  --only-class replaces them (ScaleNorms only).
- The dumped ScaleNorm rows are the module's input and output as hooks see
  them here.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker  # noqa: E402

sys.path.insert(0, os.path.join(TOP, "scripts"))

C = Checker("test_dump_options")
DUMP = os.path.join(TOP, "scripts", "dump_activations.py")
PY = sys.executable or "/usr/bin/python3"

MODEL = '''
import torch
from torch import nn

class ScaleNorm(nn.Module):            # a per-token norm with a scalar gain
    def __init__(self, eps=1e-5):
        super().__init__()
        self.g = nn.Parameter(torch.ones(()))
        self.eps = eps
    def forward(self, x):
        return self.g * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

class PreNorm(nn.Module):              # a wrapper holding its norm: not listed
    def __init__(self, d, fn):
        super().__init__()
        self.norm, self.fn = nn.LayerNorm(d), fn
    def forward(self, x):
        return self.fn(self.norm(x))

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.sn1, self.sn2 = ScaleNorm(), ScaleNorm()
        self.ff = PreNorm(d, nn.Linear(d, d))
    def forward(self, x):
        return x + self.ff(self.sn2(self.sn1(x)))

class Model(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList([Block(d), Block(d)])
        self.bn = nn.BatchNorm1d(d)
        self.gn = nn.GroupNorm(4, d)
    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.gn(self.bn(x))

def build():
    return Model().eval()

def example_inputs(model):
    return torch.randn(6, 16, generator=torch.Generator().manual_seed(2)) * 3
'''


class Done:
    def __init__(self, returncode, stderr):
        self.returncode, self.stderr = returncode, stderr


def dump(tmp, *args, inproc=True):
    """The dump script on the test model: in this process through its
    main() (one torch import for all runs), or as a command."""
    argv = ["--model", os.path.join(tmp, "scale_model.py") + ":build", "--config", "none", *args]
    if inproc:
        import contextlib
        import io
        from normcmp import dump as D
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = D.main(argv, prog="dump_activations.py")
        p = Done(rc, err.getvalue())
    else:
        p = subprocess.run([PY, DUMP, *argv], capture_output=True, text=True, cwd=tmp)
    C.ok(p.returncode == 0, f"dump {' '.join(args)}: exit {p.returncode}: {p.stderr[-300:]}")
    return p


def modules(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(json.loads(f.read(n))["__metadata__"]["modules"])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "scale_model.py"), "w") as f:
            f.write(MODEL)
        out = os.path.join(tmp, "a.safetensors")
        p = dump(tmp, "-o", out, inproc=False)
        want = ("dump_activations.py: warning: 4 modules look like norms but were not hooked: "
                "blocks.0.sn1 (ScaleNorm), blocks.0.sn2 (ScaleNorm), blocks.1.sn1 (ScaleNorm), "
                "blocks.1.sn2 (ScaleNorm); add --class ScaleNorm")
        C.ok(p.stderr.strip() == want, f"the unhooked norms in one line:\n  {p.stderr.strip()}\n"
                                       f"  expected\n  {want}")
        C.ok(modules(out) == ["blocks.0.ff.norm", "blocks.1.ff.norm"],
             f"default classes: the LayerNorms only ({modules(out)})")
        p = dump(tmp, "-o", out, "-q")
        C.ok(p.stderr == "", f"-q: no warning ({p.stderr!r})")
        p = dump(tmp, "-o", out, "--match", r"^blocks\.1\.")
        C.ok("2 modules look like norms but were not hooked: blocks.1.sn1 (ScaleNorm), "
             "blocks.1.sn2 (ScaleNorm); add --class ScaleNorm" in p.stderr,
             f"--match: only the unhooked norms it matches ({p.stderr.strip()})")
        p = dump(tmp, "-o", out, "--class", "ScaleNorm")
        C.ok("not hooked" not in p.stderr, f"--class ScaleNorm: nothing left to list "
                                           f"({p.stderr!r})")
        C.ok(modules(out) == ["blocks.0.sn1", "blocks.0.sn2", "blocks.0.ff.norm", "blocks.1.sn1",
                              "blocks.1.sn2", "blocks.1.ff.norm"],
             f"--class adds to the default classes ({modules(out)})")
        p = dump(tmp, "-o", out, "--only-class", "ScaleNorm")
        C.ok("not hooked" not in p.stderr, f"--only-class: no list ({p.stderr!r})")
        C.ok(modules(out) == ["blocks.0.sn1", "blocks.0.sn2", "blocks.1.sn1", "blocks.1.sn2"],
             f"--only-class replaces the default classes ({modules(out)})")
        p = dump(tmp, "-o", out, "--only-class", "ScaleNorm", "--class", "LayerNorm")
        C.ok(modules(out) == ["blocks.0.sn1", "blocks.0.sn2", "blocks.0.ff.norm", "blocks.1.sn1",
                              "blocks.1.sn2", "blocks.1.ff.norm"],
             f"--only-class with --class: both ({modules(out)})")
        # the ScaleNorm rows: what the module saw and returned
        import numpy as np
        import torch
        sys.path.insert(0, tmp)
        import scale_model
        m = scale_model.build()
        seen = {}
        m.blocks[0].sn2.register_forward_hook(lambda mod, i, o: seen.update(x=i[0], y=o))
        with torch.no_grad():
            m(scale_model.example_inputs(m))
        with open(out, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            head = json.loads(f.read(n))
            data = f.read()
        for role in ("input", "output"):
            e = head[f"blocks.0.sn2.{role}"]
            a = np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], "<f4")
            want = seen["x" if role == "input" else "y"].numpy().reshape(-1)
            C.ok(np.array_equal(a, want), f"blocks.0.sn2.{role}: the hooked tensor, bit for bit")
    C.done()


if __name__ == "__main__":
    main()
