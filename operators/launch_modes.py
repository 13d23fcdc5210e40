"""Switching dependent launch off and on for a measurement, in every loaded copy of the launch
layer: the project's own and each installed solution's vendored one (a solution imports its
own copies of `kernel_launch` and `dependent_launch`, so one module's switch is not enough)."""

import sys
from collections.abc import Iterator
from contextlib import contextmanager

LAUNCH_MODULE = "kernel_launch"
SWITCH_MODULE = "dependent_launch"


@contextmanager
def plain_launches() -> Iterator[None]:
    """Kernels bound inside are launched plainly, not for dependent launch (to measure what it
    gives the model); every copy's bindings are dropped on entry and on exit, so none made
    outside is reused inside or the other way round (graphs captured meanwhile keep theirs)."""
    switches = _loaded(SWITCH_MODULE)
    before = [module.DependentLaunch.enabled for module in switches]
    for module in switches:
        module.DependentLaunch.enabled = False
    _forget_bindings()
    try:
        yield
    finally:
        _forget_bindings()
        for module, enabled in zip(switches, before, strict=True):
            module.DependentLaunch.enabled = enabled


def _forget_bindings() -> None:
    for module in _loaded(LAUNCH_MODULE):
        module.forget_bindings()


def _loaded(leaf: str) -> list:
    return [
        module
        for name, module in list(sys.modules.items())
        if name.split(".")[-1] == leaf
        and name.split(".")[-2:-1] == ["operators"]
        and hasattr(module, "DependentLaunch" if leaf == SWITCH_MODULE else "forget_bindings")
    ]
