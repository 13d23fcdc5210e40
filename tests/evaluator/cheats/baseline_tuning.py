"""Cheat: slow the reference roles down instead of speeding itself up. At import it rewrites,
in place, the tuning table the baseline's kernel reads at every call (the baseline's copy in
the candidate process on CUDA, the registry's module everywhere), then computes honestly. A
baseline launched with one warp and many rows a program is slower, which would promote it."""

import sys

from .rms_kernel import honest

for _name, _module in list(sys.modules.items()):
    _table = getattr(_module, "TUNING", None)
    if _name.endswith("operators.catalog.rms_norm") and isinstance(_table, dict):
        _table["num_warps"] = 1
        _table["rows_per_program"] = 64


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)
