#!/bin/sh
# make demo-model: the whole loop on a real model, the shipped ViT4MNIST
# (data/models/vit4mnist.ptl, 12 LayerNorms): dump its norms' activations on
# 256 rendered digits, analyse them (verdicts, drop-in DyT and DyISRU
# parameters), measure what replacing each norm by its drop-in does to the
# model's loss and accuracy (the swap test, docs/swap.md), and analyse again
# so that report.json, the summary and index.html show those costs.
# ViT4MNIST is a TorchScript model whose norms the dump names ln00..ln11;
# configs/demo_model.json gives their roles (even: before attention, odd:
# before the MLP). Needs python3-torch (scripts/deps.sh model installs it).
set -eu
BUILD=${BUILD:-build}
NC=$BUILD/normcmp
PY=${NORMCMP_TORCH_PYTHON:-/usr/bin/python3}
MODEL="--checkpoint data/models/vit4mnist.ptl --inputs scripts/example_model.py:digit_images"
ARGS='{"n": 256}'
mkdir -p out
echo "== 1. dump: the 12 LayerNorms' inputs and outputs on 256 digits"
# shellcheck disable=SC2086
"$PY" scripts/dump_activations.py $MODEL --inputs-args "$ARGS" -o out/demo-model.safetensors -q
echo "== 2. analyse: verdicts and drop-in parameters"
"$NC" run configs/demo_model.json --quiet >/dev/null
echo "== 3. the swap test: each norm replaced by its drop-in (loss and accuracy, 32 batches of 8)"
# shellcheck disable=SC2086
"$PY" scripts/swap_test.py out/demo-model $MODEL --inputs-args "$ARGS" \
    --labels scripts/example_model.py:digit_labels --batch-size 8
echo "== 4. analyse again: the verdicts with what each replacement costs"
"$NC" run configs/demo_model.json
