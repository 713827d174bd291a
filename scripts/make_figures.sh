#!/bin/sh
# Regenerate every paper-style figure: runs each configs/fig_*.json (and the
# outlier-steps experiment) into out/figures/<config name>/, with the
# report, the figures, sweep CSVs and a copy of the config; then the
# gallery of docs/figures.md: one image per figure kind at single-column
# size (3.3 x 2.5 in, 110 dpi) from the shipped samples, and alpha-std of
# a synthetic 44-layer model at double-column size (6.9 x 3 in,
# configs/fig_whole_model.json), into docs/gallery/.
#
#   scripts/make_figures.sh            (what `make figures` runs)
#   scripts/make_figures.sh --gallery DIR
#                                      only the gallery, into DIR (the test
#                                      that docs/gallery/ is up to date)
#   NORMCMP=path/to/normcmp scripts/make_figures.sh
set -eu
cd "$(dirname "$0")/.."
NC=${NORMCMP:-build/normcmp}
GALLERY=docs/gallery
G=out/figures/gallery
ONLY=0
if [ "${1:-}" = --gallery ]; then
    [ $# -eq 2 ] || { echo "usage: scripts/make_figures.sh [--gallery DIR]" >&2; exit 2; }
    GALLERY=$2
    G=$(mktemp -d)
    ONLY=1
else
    mkdir -p out/figures
    for cfg in configs/fig_*.json configs/outlier_steps.json; do
        name=$(basename "$cfg" .json)
        echo "== $name"
        "$NC" run "$cfg" --out "out/figures/$name"
    done
fi

echo "== gallery"
V=data/vit4mnist
small="--size 3.3x2.5 --dpi 110 --quiet"
rm -rf "$G"
# shellcheck disable=SC2086
"$NC" plot $V/ln00_input.npy $V/ln05_input.npy $V/ln11_input.npy --no-jacobian \
    --figure scatter-grid,alpha-std,alpha-depth,tanh-family $small --out "$G/all" >/dev/null
# shellcheck disable=SC2086
"$NC" plot $V/ln11_input.npy --figure scatter,by-token,by-channel,jacobian $small \
    --out "$G/ln11" >/dev/null
"$NC" synth -o "$G/outlier.npy" --preset outlier-steps --tokens 9 --dim 100 --seed 7 >/dev/null
# shellcheck disable=SC2086
"$NC" plot "$G/outlier.npy" --label outlier-steps --experiment outlier-steps \
    --figure outlier-steps --no-jacobian \
    $small --out "$G/outlier" >/dev/null
"$NC" run configs/fig_whole_model.json --out "$G/model" --quiet >/dev/null
mkdir -p "$GALLERY"
for k in scatter by_token by_channel jacobian; do cp "$G/ln11/ln11_$k.png" "$GALLERY/$k.png"; done
for k in scatter_grid alpha_std alpha_depth tanh_family; do cp "$G/all/$k.png" "$GALLERY/$k.png"; done
cp "$G/outlier/outlier_steps.png" "$GALLERY/outlier_steps.png"
cp "$G/model/alpha_std.png" "$GALLERY/alpha_std_model.png"
if [ $ONLY = 1 ]; then
    rm -rf "$G"
    exit 0
fi

echo
echo "figures:"
find out/figures -name '*.png' | sort
echo "gallery: $(du -ch docs/gallery/*.png | tail -1 | cut -f1) in docs/gallery/"
