"""merge_compare.py FULL MERGED - the merged report of a sharded run equals
the unsharded run's (tests/cli/test_shard.sh).

Every per-layer number, the inputs and every run-level block are compared
exactly, after removing what legitimately differs: wall times ("timing",
"*time_s"), the command line, the output folder, the shard bookkeeping, and
the outputs list (compared as sets, without scatter-grid figures, which
merge does not draw). The alpha-std figure must have the same pixels, and
the drop-in parameter files (docs/dropin.md) the same bytes.
Prints "ok" or what differs; exit 0/1."""
import json
import os
import sys

full_dir, merged_dir = sys.argv[1], sys.argv[2]
full = json.load(open(os.path.join(full_dir, "report.json")))
merged = json.load(open(os.path.join(merged_dir, "report.json")))
bad = []


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k != "timing" and not k.endswith("time_s")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def diff(a, b, path):
    if type(a) is not type(b):
        bad.append(f"{path}: {a!r} vs {b!r}")
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                bad.append(f"{path}.{k}: only in {'merged' if k in b else 'full'}")
            else:
                diff(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        if len(a) != len(b):
            bad.append(f"{path}: {len(a)} vs {len(b)} items")
        for k, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{k}]")
    elif a != b:  # exact: the same bits, printed the same way
        bad.append(f"{path}: {a!r} vs {b!r}")


if len(full["layers"]) < 2:
    bad.append("the full run has fewer than two layers")
diff(strip(full["layers"]), strip(merged["layers"]), "layers")
diff(full["inputs"], merged["inputs"], "inputs")
cf, cm = dict(full["config"]), dict(merged["config"])
for k in ("output", "threads"):
    cf.pop(k, None)
    cm.pop(k, None)
diff(cf, cm, "config")
# every other top-level block (the run-level analysis) must be equal
skip = {"tool", "command", "config", "inputs", "layers", "outputs", "shard", "merged_from"}
for k in sorted((set(full) | set(merged)) - skip):
    diff(strip(full.get(k)), strip(merged.get(k)), k)
if "shard" in full or "merged_from" not in merged:
    bad.append("bookkeeping: the full run has a shard block, or merged lacks merged_from")
of = {f for f in full["outputs"] if not f.startswith("scatter_grid")}
om = set(merged["outputs"])
if of != om:
    bad.append(f"outputs: only full {sorted(of - om)}, only merged {sorted(om - of)}")
for f in om:
    if not os.path.isfile(os.path.join(merged_dir, f)):
        bad.append(f"outputs: {f} listed but missing")
dropin = [f for f in sorted(of) if f.startswith("dropin_") and f.endswith(".safetensors")]
if len(dropin) != 3:
    bad.append(f"the full run wrote {len(dropin)} drop-in files, expected 3")
for f in dropin:
    if f in om and open(os.path.join(full_dir, f), "rb").read() != \
            open(os.path.join(merged_dir, f), "rb").read():
        bad.append(f"{f}: the bytes differ")
try:
    from PIL import Image

    a = Image.open(os.path.join(full_dir, "alpha_std.png")).convert("RGB")
    b = Image.open(os.path.join(merged_dir, "alpha_std.png")).convert("RGB")
    if a.size != b.size or a.tobytes() != b.tobytes():
        bad.append("alpha_std.png: pixels differ")
except FileNotFoundError as e:
    bad.append(f"alpha_std.png: {e}")
except ModuleNotFoundError:
    pass  # no Pillow: the pixels are not compared (test_shard.sh counts it skipped)
print("ok" if not bad else "\n".join(bad[:20]))
sys.exit(1 if bad else 0)
