"""The shipped checkpoints in data/models: present, as data/models/README.md
describes them (size, sha256), and the stories260K health numbers that
README quotes are what scripts/llama2c_model.py measures.

- Each file's size and sha256 equal the README table's.
- stories260K: the greedy ids from BOS, P("Once" | BOS) and the spectral
  ratios quoted in the README's `llama2c_model.py` output are recomputed
  here (health() with a small sample: the greedy text, P(Once) and the
  spectral ratios do not depend on it); the byte-fallback rows of the token
  embedding point one way (mean pairwise cosine as quoted, from NumPy on the
  file's bytes); spectral_ratio is about 1 on i.i.d. noise and above 2 on a
  rank-1-dominated matrix, so the quoted ratios mean what the README says.
- vit4mnist: its 12 layer norms are found in its graph, named ln00..ln11.
"""
import hashlib
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker  # noqa: E402

C = Checker("test_models")
MODELS = os.path.join(TOP, "data", "models")
README = os.path.join(MODELS, "README.md")


def table(text):
    """{file: (bytes, sha256)} from the README's table rows."""
    out = {}
    for m in re.finditer(r"^\| `([^`]+)` \| (\d+) \| `([0-9a-f]{64})` \|", text, re.M):
        out[m.group(1)] = (int(m.group(2)), m.group(3))
    return out


def files(text):
    rows = table(text)
    C.ok(set(rows) == {"vit4mnist.ptl", "stories260K.bin"}, f"README table rows: {sorted(rows)}")
    for name, (size, sha) in rows.items():
        path = os.path.join(MODELS, name)
        C.ok(os.path.isfile(path), f"{path} is shipped")
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            b = f.read()
        C.ok(len(b) == size, f"{name}: {len(b)} bytes, README says {size}")
        C.ok(hashlib.sha256(b).hexdigest() == sha, f"{name}: sha256 as in the README")
    total = sum(os.path.getsize(os.path.join(TOP, "data", d, f))
                for d in os.listdir(os.path.join(TOP, "data"))
                if os.path.isdir(os.path.join(TOP, "data", d))
                for f in os.listdir(os.path.join(TOP, "data", d)))
    C.ok(total < 6e6, f"data/ stays a few MB ({total / 1e6:.1f} MB)")


def quoted(text, prefix):
    m = re.search(r"^    " + re.escape(prefix) + r"(.*)$", text, re.M)
    C.ok(m is not None, f"README quotes the line {prefix!r}")
    return m.group(1) if m else ""


def stories(text, torch):
    sys.path.insert(0, os.path.join(TOP, "scripts"))
    import llama2c_model as L
    path = os.path.join(MODELS, "stories260K.bin")
    model = L.load(path)
    h = L.health(model, batch=1, length=8)
    greedy = [int(t) for t in quoted(text, "greedy ids from BOS: ").split("(")[0].split()]
    C.ok(h["greedy"] == greedy, f"greedy ids {h['greedy']} as quoted {greedy}")
    C.ok(h["greedy"][:4] != list(L.ONCE_UPON_A_TIME), "not 'Once upon a time' (the README's "
         "finding)")
    p_once = float(quoted(text, "P(403 'Once' | BOS) = "))
    C.ok(abs(h["p_once"] - p_once) <= 0.05 * p_once + 1e-12,
         f"P(Once | BOS) {h['p_once']:.3g} as quoted {p_once:.3g}")
    spec = dict((k, float(v)) for k, v in
                re.findall(r"(\w+) ([0-9.]+)", quoted(text, "spectral ratio (median over layers; "
                                                            "~1 = no structure): ")))
    C.ok(set(spec) == set(h["spectral"]), f"spectral kinds {sorted(spec)}")
    for k, v in spec.items():
        C.abs(v, h["spectral"].get(k), 0.005, f"spectral ratio of {k} as quoted")
    # the ratio's meaning: ~1 on noise, large on a dominant direction
    rng = np.random.default_rng(7)
    noise = rng.standard_normal((172, 64))
    C.abs(1.0, L.spectral_ratio(noise), 0.08, "spectral ratio of i.i.d. noise")
    lowrank = noise + 3.0 * np.outer(rng.standard_normal(172), rng.standard_normal(64))
    C.ok(L.spectral_ratio(lowrank) > 2, "spectral ratio of noise plus a rank-1 part > 2")
    # the byte rows of the embedding, straight from the file's bytes
    raw = np.fromfile(path, dtype="<f4", offset=28).astype(np.float64)
    E = raw[:512 * 64].reshape(512, 64)[3:259]
    U = E / np.linalg.norm(E, axis=1, keepdims=True)
    cos = (U @ U.T).sum() - len(U)
    cos /= len(U) * (len(U) - 1)
    m = re.search(r"mean pairwise cosine ([0-9.]+) over the 256 rows", text)
    C.ok(m is not None and abs(float(m.group(1)) - cos) < 5e-4,
         f"byte rows' mean pairwise cosine {cos:.4f} as the README says")


def vit(torch):
    sys.path.insert(0, os.path.join(TOP, "scripts"))
    from normcmp import common, dump
    sm = torch.jit.load(os.path.join(MODELS, "vit4mnist.ptl"))
    _, layers = dump.graph_layer_norms(sm, None, common.Log("test", quiet=True))
    C.ok([t[0] for t in layers] == [f"ln{k:02d}" for k in range(12)],
         f"vit4mnist: 12 layer norms ln00..ln11 ({[t[0] for t in layers]})")


def main():
    torch = C.torch()
    with open(README) as f:
        text = f.read()
    files(text)
    stories(text, torch)
    vit(torch)
    C.done()


if __name__ == "__main__":
    main()
