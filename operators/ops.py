"""`ops.<name>(...)`: the one way a call site reaches an operator.

A call goes through the active `KernelSelection`; while `record_registry_hits` is active,
each call is also counted against the calling function, so a gate can prove a call site is
routed through the registry; while `record_registry_calls` is active, the shapes and dtypes
each call site passed and got back are counted too, so a gate can hold a declaration to them.
"""

import contextlib
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

from operators.selection import active_selection

_hit_counters: list[Counter] = []
_call_counters: list[Counter] = []


def call_operator(name: str, *args: Any, **kwargs: Any) -> Any:
    """Run operator `name` under the active selection, counting the caller as a hit."""
    if _hit_counters:
        _count_hit(name, sys._getframe(1))
    if _call_counters:
        return _recorded_call(name, sys._getframe(1), args, kwargs)
    return active_selection().resolve(name)(*args, **kwargs)


def _recorded_call(name: str, caller, args: tuple, kwargs: dict) -> Any:
    result = active_selection().resolve(name)(*args, **kwargs)
    outputs = result if isinstance(result, tuple | list) else (result,)
    key = (
        name,
        caller.f_code.co_filename,
        caller.f_code.co_qualname,
        tuple(_signature(value) for value in args),
        tuple((keyword, _signature(value)) for keyword, value in sorted(kwargs.items())),
        tuple(_signature(value) for value in outputs),
    )
    for counter in _call_counters:
        counter[key] += 1
    return result


def _signature(value: Any) -> tuple:
    """("tensor", dtype, shape) for a tensor, ("value", repr) for anything else."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("tensor", str(value.dtype).removeprefix("torch."), tuple(value.shape))
    return ("value", repr(value)[:80])


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


@contextlib.contextmanager
def record_registry_calls() -> Iterator[Counter]:
    """Count registry calls by (operator, caller file, caller qualname, argument signatures,
    keyword signatures, output signatures) inside the block."""
    counter: Counter = Counter()
    _call_counters.append(counter)
    try:
        yield counter
    finally:
        _call_counters.remove(counter)


class _Operators:
    """Attribute access turns into a registry call: `ops.rms_norm(x, w, eps=1e-6)`."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def operator(*args: Any, **kwargs: Any) -> Any:
            if _hit_counters:
                _count_hit(name, sys._getframe(1))
            if _call_counters:
                return _recorded_call(name, sys._getframe(1), args, kwargs)
            return active_selection().resolve(name)(*args, **kwargs)

        operator.__name__ = name
        return operator


ops = _Operators()
