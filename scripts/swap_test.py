#!/usr/bin/env python3
"""swap_test.py (installed as normcmp-swap) - replace a model's norm layers
by the DyT / DyISRU drop-ins normcmp fitted and measure the change of the
model's loss. `--help` and docs/swap.md describe it; the code is in the
normcmp package beside this file (normcmp/swaptest.py).
"""
import os
import sys

# make install writes here the folder of the installed normcmp package,
# relative to the installed script's folder
INSTALLED_PYTHON = None
HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, INSTALLED_PYTHON))
                if INSTALLED_PYTHON else HERE)

from normcmp import common, swaptest  # noqa: E402


def main(argv=None):
    return swaptest.main(argv, script=__file__)


if __name__ == "__main__":
    common.run_main(main, os.path.basename(sys.argv[0]) or "swap_test.py")
