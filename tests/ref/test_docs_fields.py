"""Every key of report.json is defined in the docs: each object key written
by `fit`, `run`, `sweep` and `merge` (recursively, through objects and
arrays) must appear in docs/*.md in backticks, as `key` or as a part of a code
path such as `layers[].fit_data` (docs/report.md and
the files it links define them, with formula, meaning and typical value).
Layer names used as keys are skipped.

Runs: `fit` on a vit4mnist layer with its real output and the outlier-steps
experiment, configs/demo.json (synthetic presets, the vit4mnist layers, the
outlier-steps preset, figures) in two shards and their `merge`, and `sweep`
on configs/fig_sweep.json. Lists the missing keys on failure.
"""
import glob
import json
import os
import re
import tempfile

from common import TOP, Checker, run

C = Checker("test_docs_fields.py")


def keys_of(node, skip, out, path):
    if isinstance(node, dict):
        for k, v in node.items():
            if k not in skip:
                out.setdefault(k, path + "." + k)
            keys_of(v, skip, out, path + "." + k)
    elif isinstance(node, list):
        for v in node:
            keys_of(v, skip, out, path + "[]")


def report_keys(folder, out):
    with open(os.path.join(folder, "report.json")) as f:
        rep = json.load(f)
    skip = {l.get("name") for l in rep.get("layers", []) if isinstance(l, dict)}
    keys_of(rep, skip, out, "")
    return rep


docs = ""
for p in sorted(glob.glob(os.path.join(TOP, "docs", "*.md"))):
    with open(p) as f:
        docs += f.read()
# a key is defined where it is code: `key`, or a part of a code path such as
# `layers[].fit_data` or `jacobian.ode_check` (the docs' way of naming blocks)
documented = set()
for span in re.findall(r"`([^`\n]+)`", docs):
    documented.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span))

keys = {}
with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(TOP, "data", "vit4mnist")
    run("fit", os.path.join(data, "ln00_input.npy"), "--experiment", "outlier-steps",
        "--out", os.path.join(tmp, "fit"), "--quiet")
    report_keys(os.path.join(tmp, "fit"), keys)
    demo = os.path.join(TOP, "configs", "demo.json")
    shards = []
    for k in (1, 2):
        d = os.path.join(tmp, f"demo.shard{k}")
        run("run", demo, "--shard", f"{k}/2", "--out", d, "--quiet")
        report_keys(d, keys)
        shards.append(d)
    run("merge", os.path.join(tmp, "merged"), *shards, "--quiet")
    report_keys(os.path.join(tmp, "merged"), keys)
    run("sweep", os.path.join(TOP, "configs", "fig_sweep.json"), "--out",
        os.path.join(tmp, "sweep"), "--quiet")
    report_keys(os.path.join(tmp, "sweep"), keys)

C.ok(len(keys) > 100, f"the reports have many keys ({len(keys)})")
missing = sorted(k for k in keys if k not in documented)
C.ok(not missing, "report.json keys not defined in docs/*.md as `key`: " +
     ", ".join(f"{k} (at {keys[k]})" for k in missing))
C.done()
