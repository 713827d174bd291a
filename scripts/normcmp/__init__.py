"""normcmp's Python side: the dump script's code (normcmp.dump), the swap
test (normcmp.swap module, scripts/swap_test.py), and the functions a
notebook uses without files by hand (docs/notebook.md):

    import normcmp
    res = normcmp.analyse(model, inputs)       # -> Analysis: report, verdicts, figures
    acts = normcmp.capture(model, inputs)      # -> {module: {"input": array, ...}}
    out = normcmp.swap(model, inputs, res, loss=fn)

Importing it needs neither torch nor numpy (they are imported when a
function runs). From the source tree: sys.path.insert(0, "<repo>/scripts");
`make install` puts it where /usr/bin/python3 finds it.
"""
from .common import Fail  # noqa: F401
from .notebook import Analysis, analyse, binary, capture  # noqa: F401
from .notebook import swap as _swap_fn

__all__ = ["Fail", "Analysis", "analyse", "binary", "capture", "swap"]


def swap(model, inputs, results, **kw):
    """The swap test on a model object (normcmp.notebook.swap)."""
    return _swap_fn(model, inputs, results, **kw)


swap.__doc__ = _swap_fn.__doc__
