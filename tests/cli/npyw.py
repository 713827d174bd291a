"""npyw.py - .npy and safetensors files from Python's standard library
alone, so that the command-line tests that need crafted inputs run without
NumPy (`make check`: the build dependencies and python3, nothing else).

    import npyw
    npyw.save_npy(path, rows)                 2-D: a list of rows of floats
    npyw.save_npy(path, values, shape=(n,))   any shape, values flat
    npyw.save_safetensors(path, [(name, rows), ...], meta=None)
    npyw.normals(rng, n)                      n standard normals from a random.Random

Values are stored as little-endian float32 (rounded to nearest, as NumPy's
astype(np.float32) rounds); NaN and infinities pass through.
"""
import json
import struct


def f32(v):
    """v rounded to float32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _flat(rows):
    if rows and isinstance(rows[0], (list, tuple)):
        return [v for r in rows for v in r], (len(rows), len(rows[0]))
    return list(rows), (len(rows),)


def _bytes(values):
    return struct.pack("<%df" % len(values), *values)


def save_npy(path, rows, shape=None):
    values, shp = _flat(rows)
    shape = tuple(shape) if shape is not None else shp
    dims = "(%s,)" % shape[0] if len(shape) == 1 else "(%s)" % ", ".join(map(str, shape))
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % dims
    # NumPy's layout: magic, version 1.0, header length, the header padded
    # with spaces and ended by a newline to a multiple of 64 bytes
    pad = 64 - (10 + len(head) + 1) % 64
    head += " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode("latin1"))
        f.write(_bytes(values))


def save_safetensors(path, tensors, meta=None):
    header, blobs, off = {}, [], 0
    for name, rows in tensors:
        values, shape = _flat(rows)
        b = _bytes(values)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def normals(rng, n):
    return [rng.gauss(0.0, 1.0) for _ in range(n)]
