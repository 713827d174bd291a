#!/usr/bin/env python3
"""dump_activations.py (installed as normcmp-dump) - capture what goes into
and comes out of every LayerNorm / RMSNorm module of a PyTorch model, for
normcmp. `--help` and docs/dumping.md describe it; the code is in the
normcmp package beside this file (normcmp/dump.py), which the notebook
module (normcmp.capture, normcmp.analyse) shares.
"""
import os
import sys

# make install writes here the folder of the installed normcmp package,
# relative to the installed script's folder
INSTALLED_PYTHON = None
HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, INSTALLED_PYTHON))
                if INSTALLED_PYTHON else HERE)

from normcmp import common, dump  # noqa: E402


def main(argv=None):
    return dump.main(argv, script=__file__)


if __name__ == "__main__":
    common.run_main(main, os.path.basename(sys.argv[0]) or "dump_activations.py")
