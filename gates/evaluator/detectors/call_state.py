"""State a solution carries from one call to the next: a call counter, a buffer that fills.

A kernel that counts its calls (in a module global, a default argument, a closure, a function
attribute, a tensor its own kernel increments) can compute honestly for the few hundred calls
it is judged on and return something else after the millionth, in a user's process; every
output check passes. Two calls with the same inputs' layout leave an honest solution's state as
it was: a cache keyed by layout fills on the first call and not again. So after a case's
repeat (the same inputs again) the solution's state must equal what it was after the first
call. The state is everything reachable from the solution's modules through plain data
(numbers, strings, containers), tensors (their storage, layout and, up to 256 MB, contents),
the solution's own functions (defaults, closure cells, attributes), classes and instances, and
the standard library's small holders (`functools.partial`, `itertools.count`, `deque`,
`SimpleNamespace`, an `lru_cache`'s entries). An `lru_cache`'s hit count rises on every call of
an honest cache of tiles by layout, so reading it is refused in the sources instead
(`environment_probes.py`). Other objects (a Triton kernel, a torch dtype) count by identity.
Objects are opened with `gc.get_referents` or read as builtins, never through their own
methods, so the walk runs none of the solution's code and reading defaults and closures raises
no audit event.
"""

import collections
import functools
import gc
import itertools
import os
import sys
import types

import torch

from gates.evaluator.detectors import CheatDetected

_referents = gc.get_referents  # bound before any solution is imported
PLAIN = (int, float, complex, bool, str, bytes, type(None))
MAX_DEPTH = 8
MAX_ENTRIES = 20_000
CHUNK_BYTES = 1 << 24
CONTENT_BYTES = 1 << 28
"""Tensors whose storage is up to 256 MB are fingerprinted by its contents too (a device-side
counter is one element anywhere in it); larger ones by storage, layout and version."""
HOLDERS = (functools.partial, collections.deque, types.SimpleNamespace)
"""Standard-library objects that only hold other objects: opened like containers."""


class StateAcrossCalls(CheatDetected):
    """The solution's state changed between two calls with the same inputs (a call counter, a
    buffer that accumulates), so it can behave one way for the judged calls and another
    after."""


class CallState:
    """Fingerprints of the state of the solution's modules: every module loaded from its
    folder, by file rather than by package name (`loading.solution_modules`), so one imported
    under another name is walked too."""

    def __init__(self, solution_dir: str) -> None:
        self.prefix = os.path.realpath(solution_dir) + os.sep

    def modules(self) -> list[types.ModuleType]:
        found = []
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and os.path.realpath(path).startswith(self.prefix):
                found.append(module)
        return sorted(found, key=lambda module: module.__name__)

    def fingerprint(self) -> dict[str, tuple]:
        """{where: what} for every piece of state reachable from the solution's modules."""
        modules = self.modules()
        walker = _Walker({module.__name__ for module in modules})
        for module in modules:
            for name, value in list(vars(module).items()):
                if not (name.startswith("__") and name.endswith("__")):
                    walker.walk(value, f"{module.__name__}.{name}", 0)
        return walker.entries


def first_change(before: dict[str, tuple], after: dict[str, tuple]) -> str | None:
    """The first place whose state differs between two fingerprints, in words."""
    for where in sorted(set(before) | set(after)):
        if before.get(where) != after.get(where):
            if where not in before:
                return f"{where} appeared"
            if where not in after:
                return f"{where} disappeared"
            return f"{where} changed"
    return None


def check_state_unchanged(case_key: str, before: dict[str, tuple], after: dict[str, tuple]) -> None:
    change = first_change(before, after)
    if change is not None:
        raise StateAcrossCalls(
            f"{case_key}: the solution's state changed between two calls with the same "
            f"inputs: {change}"
        )


class _Walker:
    def __init__(self, own_modules: set[str]) -> None:
        self.own_modules = own_modules
        self.entries: dict[str, tuple] = {}
        self.seen: dict[int, str] = {}

    def own(self, value) -> bool:
        """Whether a function, method or class was defined in the solution's modules (read
        without running any of their own attribute code)."""
        if isinstance(value, types.MethodType):
            value = value.__func__
        reader = type.__getattribute__ if isinstance(value, type) else object.__getattribute__
        try:
            return reader(value, "__module__") in self.own_modules
        except AttributeError:
            return False

    def walk(self, value, where: str, depth: int) -> None:
        if len(self.entries) >= MAX_ENTRIES:
            return
        if type(value) in PLAIN:  # exactly: a subclass's own __eq__ never runs here
            self.entries[where] = (type(value).__name__, value)
            return
        if isinstance(value, torch.Tensor):
            self.entries[where] = _tensor_state(value)
            return
        if id(value) in self.seen:
            self.entries[where] = ("same as", self.seen[id(value)])
            return
        if depth >= MAX_DEPTH or isinstance(value, types.ModuleType | types.CodeType):
            self.entries[where] = ("object", type(value).__qualname__, id(value))
            return
        self.seen[id(value)] = where
        # The standard types' own methods, called on the type: an attribute the solution set on
        # the object never runs.
        if isinstance(value, itertools.count):
            self.entries[where] = ("count", itertools.count.__repr__(value))
            return
        if isinstance(value, functools._lru_cache_wrapper):  # entries, not hits: a cache of
            info = functools._lru_cache_wrapper.cache_info(value)  # tiles by layout is hit on
            self.entries[where] = ("lru_cache", info.misses, info.currsize)  # every call
            for index, item in enumerate(_referents(value)):  # the wrapped function among them
                self.walk(item, f"{where}<{index}>", depth + 1)
            return
        parts = self._parts(value)
        self.entries[where] = (type(value).__qualname__, None if parts is None else len(parts))
        for label, item in parts or ():
            self.walk(item, f"{where}{label}", depth + 1)

    def _parts(self, value) -> list | None:
        """(label, part) of what `value` holds, or None for an object counted by identity."""
        kind = type(value)
        if isinstance(value, list | tuple | set | frozenset):  # their items, in their order
            return [(f"[{index}]", item) for index, item in enumerate(_referents(value))]
        if isinstance(value, dict):
            items = list(dict.items(value))
            return [(f"[{index}:{_key(key)}]", item) for index, (key, item) in enumerate(items)]
        if isinstance(value, (types.CellType, *HOLDERS)):
            return [(f"<{index}>", item) for index, item in enumerate(_referents(value))]
        if isinstance(value, types.FunctionType | types.MethodType) and self.own(value):
            return [
                (f"<{index}>", item)
                for index, item in enumerate(_referents(value))
                if not (type(item) is dict and "__builtins__" in item)  # its module's globals
            ]
        if isinstance(value, type) and self.own(value):
            namespace = _referents(value)  # the class's own dict first, without descriptors
            items = next((list(dict.items(d)) for d in namespace if type(d) is dict), [])
            return [
                (f".{name}", item)
                for name, item in items
                if not (isinstance(name, str) and name.startswith("__") and name.endswith("__"))
            ]
        if self.own(kind):
            return [
                (f"<{index}>", item)
                for index, item in enumerate(_referents(value))
                if item is not kind
            ]
        return None


def _tensor_state(tensor: torch.Tensor) -> tuple:
    with torch._C.DisableTorchFunction(), torch.no_grad():  # a subclass's overrides stay out
        if type(tensor) is not torch.Tensor:
            tensor = torch._C.TensorBase.as_subclass(tensor, torch.Tensor)
        layout = (str(tensor.device), str(tensor.dtype), tuple(tensor.shape))
        try:
            storage = tensor.untyped_storage().data_ptr(), tensor.storage_offset()
        except (RuntimeError, NotImplementedError):  # no storage (a meta tensor)
            return ("tensor", layout, None, None)
        layout += (tuple(tensor.stride()),)
        return ("tensor", layout, (*storage, tensor._version), _contents(tensor))


def _contents(tensor: torch.Tensor) -> tuple | None:
    """Two sums (plain and position-weighted) over the bytes of the tensor's whole storage,
    chunk by chunk: a count kept beside a view, in the same storage, is seen too."""
    if tensor.layout != torch.strided or tensor.is_meta:
        return None
    storage = tensor.untyped_storage()
    if not 0 < storage.nbytes() <= CONTENT_BYTES:
        return None
    raw = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(storage)
    plain = weighted = 0
    for start in range(0, raw.numel(), CHUNK_BYTES):
        chunk = raw[start : start + CHUNK_BYTES].to(torch.int64)
        positions = torch.arange(start + 1, start + chunk.numel() + 1, device=raw.device)
        plain += int(chunk.sum())
        weighted += int((chunk * positions).sum())
    return plain, weighted


def _key(value) -> str:
    """A part's name in a path: its value for plain data, its type otherwise (no `repr` of
    the solution's objects runs)."""
    text = repr(value) if type(value) in PLAIN else type(value).__qualname__
    return text[:80]
