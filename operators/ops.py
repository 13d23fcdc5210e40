"""`ops.<name>(...)`: the one way a call site reaches an operator.

A call goes through the active `KernelSelection`; while `record_registry_hits` is active,
each call is also counted against the calling function, so a gate can prove a call site is
routed through the registry.
"""

import contextlib
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

from operators.selection import active_selection

_hit_counters: list[Counter] = []


def call_operator(name: str, *args: Any, **kwargs: Any) -> Any:
    """Run operator `name` under the active selection, counting the caller as a hit."""
    if _hit_counters:
        _count_hit(name, sys._getframe(1))
    return active_selection().resolve(name)(*args, **kwargs)


def _count_hit(name: str, caller) -> None:
    site = (name, caller.f_code.co_filename, caller.f_code.co_qualname)
    for counter in _hit_counters:
        counter[site] += 1


@contextlib.contextmanager
def record_registry_hits() -> Iterator[Counter]:
    """Count registry calls by (operator, caller file, caller qualname) inside the block."""
    counter: Counter = Counter()
    _hit_counters.append(counter)
    try:
        yield counter
    finally:
        _hit_counters.remove(counter)


class _Operators:
    """Attribute access turns into a registry call: `ops.rms_norm(x, w, eps=1e-6)`."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def operator(*args: Any, **kwargs: Any) -> Any:
            if _hit_counters:
                _count_hit(name, sys._getframe(1))
            return active_selection().resolve(name)(*args, **kwargs)

        operator.__name__ = name
        return operator


ops = _Operators()
