"""Patching what the timing loop uses between two timed calls, and putting it back before
the round ends.

The full identity snapshot (`tampering`) is compared after every round: too late for a
solution that replaces, say, `torch.cuda.Event.record` or `torch.sub` at the end of one
timed call and restores it at the start of the next, so that only the evaluator's own work
between the calls (the end event, the output comparison) runs the replacement. This check
is small enough to run after every timed call: the identity of each attribute the loop
looks up, every value of the loop's own modules and classes, and the depth of the torch
function and dispatch mode stacks.
"""

import torch

from gates.evaluator.detectors import CheatDetected


class PatchedBetweenCalls(CheatDetected):
    """Something the timing loop uses changed between two timed calls."""

    detector = "tampering"


# Added to a module's globals when a warning is first issued from its code: not a patch.
WARNING_REGISTRY = "__warningregistry__"


def _mode_depths(
    function_modes=torch._C._len_torch_function_stack,
    dispatch_modes=torch._C._len_torch_dispatch_stack,
) -> tuple[int, int]:
    return function_modes(), dispatch_modes()


class LoopIdentities:
    """Identities taken before a round of timed calls; `unchanged()` is the per-call test.

    Attributes are read raw from the dictionaries of the owner and, for a class, of every
    class in its MRO, so a replacement descriptor cannot answer a class lookup with the
    original while handing instances something else. Everything `unchanged` calls is bound
    as a default argument when this module is imported, before any solution is: swapping a
    default is an audited write.
    """

    def __init__(self, attributes: list[tuple[object, str]], namespaces: list[object]) -> None:
        self._attributes = []
        for owner, name in attributes:
            holders = owner.__mro__ if isinstance(owner, type) else (owner,)
            values = tuple(vars(holder).get(name) for holder in holders)
            self._attributes.append((owner, holders, type(owner), name, values))
        self._namespaces = []
        for space in namespaces:
            names = tuple(name for name in vars(space) if name != WARNING_REGISTRY)
            self._namespaces.append((space, names, [vars(space)[name] for name in names]))
        self._modes = _mode_depths()

    def unchanged(
        self,
        vars=vars,
        type=type,
        isinstance=isinstance,
        tuple=tuple,
        zip=zip,
        depths=_mode_depths,
        registry=WARNING_REGISTRY,
    ) -> bool:
        """The cheap test, run after every timed call."""
        for owner, holders, kind, name, values in self._attributes:
            if type(owner) is not kind or (isinstance(owner, type) and owner.__mro__ != holders):
                return False
            for holder, value in zip(holders, values, strict=False):
                if vars(holder).get(name) is not value:
                    return False
        for space, names, values in self._namespaces:
            namespace = vars(space)
            if tuple(name for name in namespace if name != registry) != names:
                return False
            for name, before in zip(names, values, strict=False):
                if namespace[name] is not before:
                    return False
        return depths() == self._modes

    def changed(self) -> list[str]:
        """What differs now (for the message)."""
        moved = []
        for owner, holders, kind, name, values in self._attributes:
            now = tuple(vars(holder).get(name) for holder in holders)
            mro = owner.__mro__ if isinstance(owner, type) else holders
            if (
                type(owner) is not kind
                or mro != holders
                or any(a is not b for a, b in zip(now, values, strict=True))
            ):
                moved.append(f"{getattr(owner, '__name__', '?')}.{name}")
        for space, names, values in self._namespaces:
            before = dict(zip(names, values, strict=True))
            now = {k: v for k, v in vars(space).items() if k != WARNING_REGISTRY}
            keys = sorted(k for k in now.keys() | before.keys() if now.get(k) is not before.get(k))
            moved += [f"{getattr(space, '__name__', '?')}.{key}" for key in keys]
        if _mode_depths() != self._modes:
            moved.append("the torch function or dispatch mode stack")
        return moved
