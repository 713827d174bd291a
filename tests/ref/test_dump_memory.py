"""Peak memory of scripts/dump_activations.py on models of realistic width
(tests/ref/wide_models.py: a 12-block LLaMA-style decoder of width 768 with
LlamaRMSNorm, dumped into a folder of shards, and a 12-block ViT-style
encoder of width 768 with nn.LayerNorm, dumped into one file; random
weights, about 256 tokens so that torch computes for a few seconds).

Each dump runs in a child process. The model callable is given warm=True:
right after building the model it runs one plain forward pass and records
the peak resident set size then (VmHWM, the baseline: torch, the model and
what its forward pass needs). After the dump the child reads VmHWM again.
The bound: peak - baseline < 2 x the largest module's tensors (input,
output, weight, bias as written), however much is written in all (about
25 times that here). The script before shards kept everything it captured
and measured 66.8 MB above the baseline for the decoder's 39.4 MB dump.

The child runs with MALLOC_MMAP_THRESHOLD_=131072: glibc otherwise raises
its mmap threshold as blocks are freed (up to 32 MB), keeps freed blocks of
a few MB in its heap, and two identical forward passes then differ by
3-18 MB in VmHWM from run to run; with a fixed threshold VmHWM measures
what is live. (Real layers of 4096 x 4096 are above 32 MB: always mapped.)

For a one-off measurement of another decoder shape with glibc's default
allocator (docs/dumping.md):

    /usr/bin/python3 tests/ref/test_dump_memory.py \
        '{"d": 2048, "blocks": 4, "heads": 16, "hidden": 5504, "tokens": 1024}' default-malloc
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker  # noqa: E402

C = Checker("test_dump_memory")
PY = sys.executable or "/usr/bin/python3"
WIDE = os.path.join(TOP, "tests", "ref", "wide_models.py")
BOUND = 2.0  # x the largest module's tensors

CHILD = r'''
import json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
import numpy
import torch
torch.set_num_threads(1)
import dump_activations as D
rc = D.main(sys.argv[2:])
hwm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"rc": rc, "base_kb": int(os.environ["NC_WARM_HWM_KB"]), "peak_kb": hwm}))
'''


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h


def module_bytes(paths):
    """{module: bytes of its tensors} over the files written."""
    out = {}
    for p in paths:
        for name, e in header(p).items():
            mod = name.rsplit(".", 1)[0]
            b, t = e["data_offsets"]
            out[mod] = out.get(mod, 0) + t - b
    return out


def measure(tmp, label, model, kw, out, files, fixed_mmap=True):
    args = ["--model", f"{WIDE}:{model}", "--model-args", json.dumps(dict(kw, warm=True)),
            "-o", out, "--tokens", "0", "--config", "none", "-q"]
    env = dict(os.environ)
    if fixed_mmap:
        env["MALLOC_MMAP_THRESHOLD_"] = "131072"
    p = subprocess.run([PY, "-c", CHILD, TOP, *args], capture_output=True, text=True, env=env,
                       cwd=tmp)
    C.ok(p.returncode == 0, f"{label}: the dump ran: {p.stderr.strip()[-400:]}")
    if p.returncode:
        return
    r = json.loads(p.stdout.strip().splitlines()[-1])
    paths = files(out)
    mods = module_bytes(paths)
    total = sum(os.path.getsize(q) for q in paths)
    largest = max(mods.values())
    delta = (r["peak_kb"] - r["base_kb"]) * 1024
    print(f"{label}: wrote {total / 1e6:.1f} MB ({len(mods)} modules in {len(paths)} files, the "
          f"largest {largest / 1e6:.2f} MB); peak RSS {r['peak_kb'] / 1024:.0f} MiB, "
          f"{delta / 1e6:.2f} MB above the baseline {r['base_kb'] / 1024:.0f} MiB "
          f"({delta / largest:.2f} x the largest module, {delta / total:.3f} x the dump)")
    C.ok(len(mods) == 2 * kw.get("blocks", 12) + 1, f"{label}: every module written "
                                                     f"({len(mods)})")
    C.ok(delta < BOUND * largest,
         f"{label}: peak RSS {delta / 1e6:.2f} MB above the baseline, expected below "
         f"{BOUND:g} x the largest module's {largest / 1e6:.2f} MB")


def main():
    C.torch(threads=None)
    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) > 1:  # a one-off measurement of another decoder
            kw = json.loads(sys.argv[1])
            measure(tmp, f"llama_decoder {sys.argv[1]}", "llama_decoder", kw,
                    os.path.join(tmp, "llama"),
                    lambda o: sorted(os.path.join(o, n) for n in os.listdir(o)
                                     if n.endswith(".safetensors")),
                    fixed_mmap="default-malloc" not in sys.argv[2:])
            C.done()
        folder = os.path.join(tmp, "llama")
        measure(tmp, "llama_decoder d=768 x 12 blocks, 256 tokens, folder", "llama_decoder",
                {"tokens": 256}, folder,
                lambda o: sorted(os.path.join(o, n) for n in os.listdir(o)
                                 if n.endswith(".safetensors")))
        one = os.path.join(tmp, "vit.safetensors")
        measure(tmp, "vit_encoder d=768 x 12 blocks, 257 tokens, one file", "vit_encoder",
                {"batch": 1}, one, lambda o: [o])
    C.done()


if __name__ == "__main__":
    main()
