"""`ops.<name>(...)`: the one way a call site reaches an operator.

A call goes through the active `KernelSelection`; while `record_registry_hits` is active,
each call is also counted against the calling function, so a gate can prove a call site is
routed through the registry; while `record_registry_calls` is active, the shapes and dtypes
each call site passed and got back are counted too, so a gate can hold a declaration to them
(and an observer given to it sees each call's arguments and result, which `capture-ops` keeps);
while `label_registry_calls` is active, each call is a `registry:<name>` profiler range.
While `torch.compile` traces, a call goes to what the active selection resolved for compiled
graphs (see `operators.library`) and is neither counted nor recorded.
"""

import contextlib
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import torch

from operators.selection import active_selection

_hit_counters: list[Counter] = []
CallObserver = Callable[[str, tuple, dict, Any], None]

_call_counters: list[Counter] = []
_call_observers: list[CallObserver] = []
_range_labels: list[bool] = []


def _labelled_call(name: str, args: tuple, kwargs: dict) -> Any:
    with torch.profiler.record_function(f"registry:{name}"):
        return active_selection().resolve(name)(*args, **kwargs)


def _recorded_call(name: str, caller, args: tuple, kwargs: dict) -> Any:
    for observer in _call_observers:
        starting = getattr(observer, "call_starting", None)  # an observer that sees both ends
        if starting is not None:
            starting(name, args, kwargs)
    result = active_selection().resolve(name)(*args, **kwargs)
    for observer in _call_observers:
        observer(name, args, kwargs, result)
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
def record_registry_calls(observer: CallObserver | None = None) -> Iterator[Counter]:
    """Count registry calls by (operator, caller file, caller qualname, argument signatures,
    keyword signatures, output signatures) inside the block; `observer(name, args, kwargs,
    result)`, when given, sees each call after it returned (and, when it has a
    `call_starting(name, args, kwargs)` method, before it runs)."""
    counter: Counter = Counter()
    _call_counters.append(counter)
    if observer is not None:
        _call_observers.append(observer)
    try:
        yield counter
    finally:
        _call_counters.remove(counter)
        if observer is not None:
            _call_observers.remove(observer)


@contextlib.contextmanager
def label_registry_calls() -> Iterator[None]:
    """Wrap each registry call in a `registry:<name>` profiler range inside the block."""
    _range_labels.append(True)
    try:
        yield
    finally:
        _range_labels.pop()


def operator_function(name: str) -> Callable[..., Any]:
    """The function `ops.<name>` stands for; it reads the active selection at every call."""

    def operator(*args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_compiling():
            return active_selection().compiled(name)(*args, **kwargs)
        if _hit_counters:
            _count_hit(name, sys._getframe(1))
        if _call_counters:
            return _recorded_call(name, sys._getframe(1), args, kwargs)
        if _range_labels:
            return _labelled_call(name, args, kwargs)
        return active_selection().resolve(name)(*args, **kwargs)

    operator.__name__ = operator.__qualname__ = name
    return operator


class _Operators:
    """Attribute access turns into a registry call: `ops.rms_norm(x, w, eps=1e-6)`.

    The function for a name is made once and kept as an attribute, so later accesses (and
    `torch.compile`'s tracing) find a plain attribute instead of running `__getattr__`.
    """

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        operator = operator_function(name)
        setattr(self, name, operator)
        return operator

    def bind(self, names: list[str]) -> None:
        """Make the functions for `names` now (the registered operators, at import)."""
        for name in names:
            getattr(self, name)


ops = _Operators()
