"""make_norm_dumps.py DIR - small RMSNorm dumps for tests/cli/test_normcheck.sh,
built here (no model, no ../shared) in the layout scripts/dump_activations.py
writes: "<m>.input", "<m>.output", "<m>.weight" and __metadata__ keys
"<m>.norm", "<m>.eps".

  rms.safetensors         two RMSNorm layers (eps 1e-3), metadata right
  rms_nometa.safetensors  the same tensors, no norm metadata
  rms_wrongeps.safetensors  metadata says eps 1e-6; the output used 1e-3
  pair_input.npy (+ _output, _weight)   RMSNorm eps 1e-3, no metadata
  big_input.npy (+ _output)  RMSNorm eps 1e-6 on inputs of scale ~100:
                             eps below what float32 outputs can show
The inputs have a per-token mean far from 0, so LayerNorm and RMSNorm differ.
The outputs are computed in float64 and stored as float32."""
import json
import os
import struct
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(7)


def rmsnorm(x, w, eps):
    x = x.astype(np.float64)
    y = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    return (y * w if w is not None else y).astype(np.float32)


def layer(n, d, scale):
    # token scales from 0.02 to 1 (times scale): small ones identify eps
    s = scale * np.exp(rng.uniform(np.log(0.02), 0, size=(n, 1)))
    x = (rng.standard_normal((n, d)) + 0.7) * s
    return x.astype(np.float32)


def write_st(path, tensors, meta):
    header, off, blobs = {}, 0, []
    for name, a in tensors:
        b = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    if meta:
        header["__metadata__"] = meta
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))


tensors, meta, wrong = [], {"format": "normcmp activation dump"}, {}
for m, d in (("blocks.0.norm", 48), ("blocks.1.norm", 64)):
    x = layer(400, d, 1.0)
    w = (rng.uniform(0.5, 1.5, d)).astype(np.float32)
    tensors += [(m + ".input", x), (m + ".output", rmsnorm(x, w, 1e-3)), (m + ".weight", w)]
    meta.update({m + ".norm": "rmsnorm", m + ".eps": repr(1e-3)})
    wrong.update({m + ".norm": "rmsnorm", m + ".eps": repr(1e-6)})
write_st(os.path.join(out, "rms.safetensors"), tensors, meta)
write_st(os.path.join(out, "rms_nometa.safetensors"), tensors, {"format": "no norm keys"})
write_st(os.path.join(out, "rms_wrongeps.safetensors"), tensors, wrong)

x = layer(300, 40, 1.0)
w = rng.uniform(0.5, 1.5, 40).astype(np.float32)
np.save(os.path.join(out, "pair_input.npy"), x)
np.save(os.path.join(out, "pair_output.npy"), rmsnorm(x, w, 1e-3))
np.save(os.path.join(out, "pair_weight.npy"), w)

x = (rng.standard_normal((300, 40)) + 0.7).astype(np.float32) * 100
np.save(os.path.join(out, "big_input.npy"), x.astype(np.float32))
np.save(os.path.join(out, "big_output.npy"), rmsnorm(x, None, 1e-6))
