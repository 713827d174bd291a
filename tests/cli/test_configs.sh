# test_configs.sh - every config shipped in configs/ runs as is, and leaves
# what it promises in its output folder: the report, a copy of the config,
# and its figures and sweep CSVs (configs/*.json are what `make demo` and
# `make figures` run; a config that stops working must fail the suite).
. tests/cli/lib.sh

for cfg in configs/*.json; do
    name=$(basename "$cfg" .json)
    if [ "$name" = demo_model ]; then
        # make demo-model's config reads the dump its first step writes
        # (out/demo-model.safetensors): here the same dump on 48 digits,
        # and the config as shipped with only its input moved there
        if ! have_py torch; then
            skip "configs/demo_model.json on a ViT4MNIST dump" python3-torch
            continue
        fi
        /usr/bin/python3 scripts/dump_activations.py \
            --checkpoint data/models/vit4mnist.ptl \
            --inputs scripts/example_model.py:digit_images \
            --inputs-args '{"n": 48}' -o "$T/vit.safetensors" -q
        sed "s#\.\./out/demo-model\.safetensors#$T/vit.safetensors#" "$cfg" >"$T/demo_model.json"
        cfg=$T/demo_model.json
    fi
    run "$NC" run "$cfg" --out "$T/$name" --quiet
    expect_status 0
    expect_file "$T/$name/report.json"
    expect_file "$T/$name/config.json"
    # every file the report lists as an output exists
    /usr/bin/python3 - "$T/$name" >"$T/.check" 2>&1 <<'PY'
import json, os, sys
d = sys.argv[1]
rep = json.load(open(os.path.join(d, "report.json")))
missing = [f for f in rep["outputs"] if not os.path.exists(os.path.join(d, f))]
print("missing:", missing) if missing else print("ok", len(rep["outputs"]))
PY
    if grep -q '^ok' "$T/.check"; then _ok; else _bad "$name: $(cat "$T/.check")"; fi
done
# the figures the issue names for make demo
for f in scatter_grid_synthetic.png scatter_grid_vit4mnist.png late_by_token.png \
    late_by_channel.png late_jacobian.png ln11_by_token.png ln11_by_channel.png \
    ln11_jacobian.png alpha_std.png; do
    expect_file "$T/demo/$f"
done
# one thread gives the same figures as the default (passes and figure
# drawing split across threads): every PNG's pixels and text chunks but the
# command line, and every SVG
run "$NC" run configs/demo.json --out "$T/demo1" --quiet --threads 1
expect_status 0
if have_py PIL; then
/usr/bin/python3 - "$T/demo" "$T/demo1" >"$T/.check" 2>&1 <<'PY'
import os, sys
from PIL import Image
a, b = sys.argv[1], sys.argv[2]
bad, n = [], 0
for f in sorted(os.listdir(a)):
    if f.endswith(".png"):
        n += 1
        ia, ib = Image.open(os.path.join(a, f)), Image.open(os.path.join(b, f))
        ta = {k: v for k, v in ia.info.items() if k != "Command"}
        tb = {k: v for k, v in ib.info.items() if k != "Command"}
        if ia.tobytes() != ib.tobytes() or ta != tb:
            bad.append(f)
print("ok", n) if n and not bad else print("differ:", bad, "of", n)
PY
if grep -q '^ok' "$T/.check"; then _ok; else _bad "demo with one thread: $(cat "$T/.check")"; fi
else
    skip "the demo's PNGs with one thread against two" python3-pil
fi
# and SVG figures come out the same on every run although PNGs are drawn
# by two threads (cairo numbers SVG elements from one counter of the
# process): the same command four times, the same bytes
"$NC" synth -o "$T/s1.npy" --preset late --tokens 256 --dim 64 --seed 1 >/dev/null
"$NC" synth -o "$T/s2.npy" --preset early --tokens 256 --dim 64 --seed 2 >/dev/null
for k in 1 2 3 4; do
    rm -rf "$T/svg"
    "$NC" plot "$T/s1.npy" "$T/s2.npy" --figure scatter,by-token --format svg,png --out "$T/svg" \
        -q >/dev/null
    cat "$T"/svg/*.svg | md5sum
done >"$T/.sums"
_cmd="plot --format svg,png four times"
if [ "$(sort -u "$T/.sums" | wc -l)" -eq 1 ] && [ -s "$T/.sums" ]; then _ok; else _bad "SVG bytes differ between runs: $(sort "$T/.sums" | uniq -c | tr '\n' ' ')"; fi
expect_file "$T/fig_sweep/ln05_sweep_alpha.csv"
expect_file "$T/fig_sweep/ln05_sweep_alpha.png"
expect_file "$T/outlier_steps/outlier_steps.png"
expect_file "$T/fig_tanh_family/tanh_family.svg"

done_tests
