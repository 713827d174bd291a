#!/bin/sh
# Regenerate every paper-style figure: runs each configs/fig_*.json (and the
# outlier-steps experiment) into out/figures/<config name>/, with the
# report, the figures, sweep CSVs and a copy of the config.
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
echo
echo "figures:"
find out/figures -name '*.png' | sort
