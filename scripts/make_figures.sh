#!/bin/sh
# Regenerate every paper-style figure: runs each configs/fig_*.json (and the
# outlier-steps experiment) into out/figures/<config name>/, with the
# report, the figures, sweep CSVs and a copy of the config; then the
# gallery of docs/figures.md: one image per figure kind at single-column
# size (3.3 x 2.5 in, 110 dpi) from the shipped samples, into docs/gallery/.
#
#   scripts/make_figures.sh            (what `make figures` runs)
#   NORMCMP=path/to/normcmp scripts/make_figures.sh
set -eu
cd "$(dirname "$0")/.."
NC=${NORMCMP:-build/normcmp}
mkdir -p out/figures
for cfg in configs/fig_*.json configs/outlier_steps.json; do
    name=$(basename "$cfg" .json)
    echo "== $name"
    "$NC" run "$cfg" --out "out/figures/$name"
done

echo "== gallery"
V=data/vit4mnist
G=out/figures/gallery
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
mkdir -p docs/gallery
for k in scatter by_token by_channel jacobian; do cp "$G/ln11/ln11_$k.png" "docs/gallery/$k.png"; done
for k in scatter_grid alpha_std alpha_depth tanh_family; do cp "$G/all/$k.png" "docs/gallery/$k.png"; done
cp "$G/outlier/outlier_steps.png" docs/gallery/outlier_steps.png

echo
echo "figures:"
find out/figures -name '*.png' | sort
echo "gallery: $(du -ch docs/gallery/*.png | tail -1 | cut -f1) in docs/gallery/"
