"""Cheat (CUDA): slow the reference roles down through private state the identity snapshot
does not watch. At import it swaps the private binding table of the baseline's (and the
incumbent's) `operators.kernel_launch` copy in the candidate process for one whose bindings
launch the bound kernel twice, then computes honestly: every graph of the baseline would
run twice the work, and the candidate would be promoted over it."""

import sys

from .rms_kernel import honest


class _Twice(dict):
    def get(self, key, default=None):
        bound = super().get(key, default)
        return None if bound is None else (_Doubled(bound[0]), bound[1])


class _Doubled:
    def __init__(self, compiled):
        self.compiled = compiled

    def __getitem__(self, grid):
        run = self.compiled[grid]

        def twice(*args):
            run(*args)
            run(*args)

        return twice


_OWN = __name__.split(".")[0]  # the other solutions' packages are named as this one is
for _name, _module in list(sys.modules.items()):
    _table = getattr(_module, "_bound", None)
    _other_solution = _name.startswith("_tuned_") and _name.split(".")[0] != _OWN
    if _other_solution and isinstance(_table, dict):
        _module._bound = _Twice(_table)


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)
