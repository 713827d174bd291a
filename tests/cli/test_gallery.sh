# test_gallery.sh - docs/gallery/ is what `make figures` draws now: the
# gallery is drawn again (scripts/make_figures.sh --gallery, into a scratch
# folder) and every image compared with the one in docs/gallery/ by its
# decoded pixels (the PNG bytes also hold the command line, which names the
# folders), and the two sets of names must be the same. When this fails,
# run `make figures` and commit docs/gallery/.
. tests/cli/lib.sh

run env NORMCMP="$NC" sh scripts/make_figures.sh --gallery "$T/g"
expect_status 0
run /usr/bin/python3 - docs/gallery "$T/g" <<'PY'
import os, sys
import numpy as np
from PIL import Image

have, new = sys.argv[1], sys.argv[2]
a = sorted(f for f in os.listdir(have) if f.endswith(".png"))
b = sorted(f for f in os.listdir(new) if f.endswith(".png"))
bad = []
if a != b:
    bad.append(f"docs/gallery has {a}, make figures draws {b}")
for f in sorted(set(a) & set(b)):
    x = np.asarray(Image.open(os.path.join(have, f)).convert("RGBA"))
    y = np.asarray(Image.open(os.path.join(new, f)).convert("RGBA"))
    if x.shape != y.shape:
        bad.append(f"{f}: {x.shape[1]} x {x.shape[0]} px, now {y.shape[1]} x {y.shape[0]}")
    elif (x != y).any():
        bad.append(f"{f}: {int((x != y).any(axis=2).sum())} pixels differ")
print("ok" if not bad else "stale gallery (run make figures): " + "; ".join(bad))
sys.exit(1 if bad else 0)
PY
expect_status 0
expect_out_has ok

done_tests
