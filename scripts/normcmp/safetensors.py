"""A small, strict safetensors reader (NumPy): the drop-in parameter files
normcmp writes and the dumps the notebook module reads back. The format:
an 8-byte little-endian header length n, n bytes of JSON (per tensor its
"dtype", "shape" and "data_offsets" [begin, end) into the data that
follows; "__metadata__" a map of strings), then the data.

Every check that fails is a one-line Fail naming the file, the tensor or
field, what was found and what was expected (exit status 2).
"""
import os
import stat
import struct

from .common import Fail
from .outputs import parse_json

DTYPES = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


def read(path, np, names=None):
    """(tensors, metadata): tensors maps each name (all, or those in
    `names`) to a float32/float64 NumPy array of its shape (BF16 widened to
    float32 exactly); metadata is the __metadata__ map ({} if none)."""
    try:
        # without blocking (a FIFO), a regular file (also through a link)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Fail(f"{path}: not a regular file, expected a safetensors file")
            size = st.st_size
            head = f.read(8)
            if len(head) < 8:
                raise Fail(f"{path}: {size} bytes, too short for a safetensors file")
            n = struct.unpack("<Q", head)[0]
            if n > size - 8 or n > 100 << 20:
                raise Fail(f"{path}: header length {n} does not fit the file's {size} bytes")
            header = parse_json(f.read(n), f"{path}: header")
            if not isinstance(header, dict):
                raise Fail(f"{path}: header: expected a JSON object")
            meta = header.pop("__metadata__", {}) or {}
            if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
                raise Fail(f"{path}: __metadata__: expected an object of strings")
            base = 8 + n
            out = {}
            for name, e in header.items():
                if names is not None and name not in names:
                    continue
                out[name] = _tensor(f, path, name, e, base, size, np)
    except OSError as e:
        raise Fail(f"{path}: cannot read: {e.strerror or e}", 1)
    return out, meta


def _tensor(f, path, name, e, base, size, np):
    if not isinstance(e, dict):
        raise Fail(f"{path}: {name}: expected an object with dtype, shape and data_offsets")
    dt, shape, offs = e.get("dtype"), e.get("shape"), e.get("data_offsets")
    if dt not in DTYPES:
        raise Fail(f"{path}: {name}: dtype {dt!r}, expected one of {', '.join(DTYPES)}")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise Fail(f"{path}: {name}: shape {shape!r}, expected a list of sizes")
    if not (isinstance(offs, list) and len(offs) == 2 and all(isinstance(o, int) for o in offs)
            and 0 <= offs[0] <= offs[1] and base + offs[1] <= size):
        raise Fail(f"{path}: {name}: data_offsets {offs!r} outside the file's "
                   f"{size - base} data bytes")
    count = 1
    for s in shape:
        count *= s
    code, item = DTYPES[dt]
    if offs[1] - offs[0] != count * item:
        raise Fail(f"{path}: {name}: {offs[1] - offs[0]} bytes for shape {shape} {dt}, "
                   f"expected {count * item}")
    f.seek(base + offs[0])
    a = np.frombuffer(f.read(count * item), dtype=code)
    if dt == "BF16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64 if dt == "F64" else np.float32).reshape(shape)
