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

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.deferred_code import mode_depths


class PatchedBetweenCalls(CheatDetected):
    """Something the timing loop uses changed between two timed calls."""


# Added to a module's globals when a warning is first issued from its code: not a patch.
WARNING_REGISTRY = "__warningregistry__"


class LoopIdentities:
    """Identities taken before a round of timed calls; `unchanged()` is the per-call test.

    Attributes are read raw from the dictionaries of the owner and, for a class, of every
    class in its MRO, so a replacement descriptor cannot answer a class lookup with the
    original while handing instances something else. Everything the check calls is bound as
    a default argument when this module is imported, before any solution is: swapping a
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
        self._modes = mode_depths()

    def _differences(
        self,
        vars=vars,
        type=type,
        isinstance=isinstance,
        tuple=tuple,
        zip=zip,
        getattr=getattr,
        depths=mode_depths,
        registry=WARNING_REGISTRY,
    ):
        """Names of what moved, in order; lazily, so `unchanged` reads only up to the first."""
        for owner, holders, kind, name, values in self._attributes:
            moved = type(owner) is not kind
            moved = moved or (isinstance(owner, type) and owner.__mro__ != holders)
            for holder, value in zip(holders, values, strict=False):
                moved = moved or vars(holder).get(name) is not value
            if moved:
                yield f"{getattr(owner, '__name__', '?')}.{name}"
        for space, names, values in self._namespaces:
            namespace = vars(space)
            label = getattr(space, "__name__", "?")
            now = tuple(key for key in namespace if key != registry)
            if now != names:
                yield from (f"{label}.{key}" for key in sorted(set(now) ^ set(names)))
            for key, before in zip(names, values, strict=False):
                if namespace.get(key) is not before:
                    yield f"{label}.{key}"
        if depths() != self._modes:
            yield "the torch function or dispatch mode stack"

    def unchanged(self, next=next, differences=_differences) -> bool:
        """The cheap test, run after every timed call: stops at the first difference (the
        walk is bound here too, so replacing the class attribute changes nothing)."""
        return next(differences(self), None) is None

    def changed(self) -> list[str]:
        """What differs now (for the message)."""
        return list(self._differences())
