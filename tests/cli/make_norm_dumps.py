"""make_norm_dumps.py DIR - small RMSNorm dumps for tests/cli/test_normcheck.sh,
built here (no model, no checkpoint) in the layout scripts/dump_activations.py
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
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyw  # noqa: E402  (no NumPy needed: make check)

out = sys.argv[1]
rng = random.Random(7)


def rmsnorm(x, w, eps):
    """RMSNorm of float32 rows x, in float64 (stored as float32 by npyw)."""
    y = []
    for row in x:
        s = math.sqrt(math.fsum(v * v for v in row) / len(row) + eps)
        y.append([v / s * (w[i] if w is not None else 1.0) for i, v in enumerate(row)])
    return y


def layer(n, d, scale):
    # token scales from 0.02 to 1 (times scale): small ones identify eps
    x = []
    for _ in range(n):
        s = scale * math.exp(rng.uniform(math.log(0.02), 0))
        x.append([npyw.f32((rng.gauss(0.0, 1.0) + 0.7) * s) for _ in range(d)])
    return x


def weights(d):
    return [npyw.f32(rng.uniform(0.5, 1.5)) for _ in range(d)]


tensors, meta, wrong = [], {"format": "normcmp activation dump"}, {}
for m, d in (("blocks.0.norm", 48), ("blocks.1.norm", 64)):
    x = layer(400, d, 1.0)
    w = weights(d)
    tensors += [(m + ".input", x), (m + ".output", rmsnorm(x, w, 1e-3)), (m + ".weight", w)]
    meta.update({m + ".norm": "rmsnorm", m + ".eps": repr(1e-3)})
    wrong.update({m + ".norm": "rmsnorm", m + ".eps": repr(1e-6)})
npyw.save_safetensors(os.path.join(out, "rms.safetensors"), tensors, meta)
npyw.save_safetensors(os.path.join(out, "rms_nometa.safetensors"), tensors, {"format": "no norm keys"})
npyw.save_safetensors(os.path.join(out, "rms_wrongeps.safetensors"), tensors, wrong)

x = layer(300, 40, 1.0)
w = weights(40)
npyw.save_npy(os.path.join(out, "pair_input.npy"), x)
npyw.save_npy(os.path.join(out, "pair_output.npy"), rmsnorm(x, w, 1e-3))
npyw.save_npy(os.path.join(out, "pair_weight.npy"), w)

x = [[npyw.f32(npyw.f32(rng.gauss(0.0, 1.0) + 0.7) * 100) for _ in range(40)] for _ in range(300)]
npyw.save_npy(os.path.join(out, "big_input.npy"), x)
npyw.save_npy(os.path.join(out, "big_output.npy"), rmsnorm(x, None, 1e-6))
