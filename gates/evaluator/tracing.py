"""Watch one candidate call: its ATen ops, its fresh allocations, and its host compute.

An op is the candidate's unless the nearest frame that issued it belongs to Triton's own
launch machinery (interpreter, autotuner, testing), recognised by code object, not by file
name, so solution code cannot pass itself off as Triton. Fresh allocations the candidate
makes are poisoned before it sees them.
"""

import os
import sys
import types

import torch
import triton
from torch.utils._python_dispatch import TorchDispatchMode

from gates.evaluator.detectors.compute_fallback import HOST_TRANSFER_METHODS, is_allowed_op
from gates.evaluator.detectors.precision import narrows_precision
from gates.evaluator.detectors.uninitialised_memory import poison

POISONED_ALLOCATIONS = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
)
LIBRARY_ROOTS = tuple(
    os.path.dirname(os.path.realpath(module.__file__)) + os.sep for module in (torch, triton)
)


def triton_internal_code() -> frozenset:
    """Code objects of Triton's interpreter, autotuner and benchmarking helpers."""
    import importlib

    codes: set = set()
    for name in ("triton.runtime.interpreter", "triton.runtime.autotuner", "triton.testing"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        _collect_code(vars(module), codes, module.__name__, set())
    return frozenset(codes)


def _collect_code(namespace: dict, codes: set, module_name: str, seen: set) -> None:
    for value in list(namespace.values()):
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if isinstance(value, property):
            for accessor in (value.fget, value.fset, value.fdel):
                if accessor is not None:
                    _add_code(accessor.__code__, codes)
            continue
        if isinstance(value, types.FunctionType) and value.__module__ == module_name:
            _add_code(value.__code__, codes)
        elif isinstance(value, type) and value.__module__ == module_name:
            _collect_code(dict(vars(value)), codes, module_name, seen)


def _add_code(code: types.CodeType, codes: set) -> None:
    codes.add(code)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            _add_code(constant, codes)


class CandidateTracer(TorchDispatchMode):
    """Records the candidate's disallowed ATen ops and poisons its fresh allocations."""

    def __init__(
        self,
        internal_code: frozenset,
        extra_allowed: frozenset,
        poison_outputs: bool,
        expected_stream: int | None = None,
    ):
        super().__init__()
        self.expected_stream = expected_stream
        self.side_stream_ops: list[str] = []
        self.internal_code = internal_code
        self.extra_allowed = extra_allowed
        self.poison_outputs = poison_outputs
        self.disallowed: list[str] = []
        self.narrowing: list[str] = []
        self.casts: list[str] = []
        self.seen: set[str] = set()  # every op name, internal code's too (for AtenRecorder)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        self.seen.add(func.overloadpacket.__name__)
        if not self._issued_by_candidate():
            return result
        name = func.overloadpacket.__name__
        if self.expected_stream is not None and self._on_side_stream():
            self.side_stream_ops.append(str(func))
        if not is_allowed_op(name, func._overloadname, args, kwargs, self.extra_allowed):
            self.disallowed.append(str(func))
            if name in ("_to_copy", "copy_"):
                self.casts.append(str(func))
            if narrows_precision(name, args, kwargs, result):
                self.narrowing.append(str(func))
        elif self.poison_outputs and name in POISONED_ALLOCATIONS:
            poison(result)
        return result

    def _on_side_stream(self) -> bool:
        return torch.cuda.current_stream().cuda_stream != self.expected_stream

    def _issued_by_candidate(self) -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            if code in self.internal_code:
                return False
            transparent = code.co_filename.startswith(LIBRARY_ROOTS + ("<frozen",))
            if transparent or code is _DISPATCH_CODE:
                frame = frame.f_back
                continue
            return True
        return True


_DISPATCH_CODE = CandidateTracer.__torch_dispatch__.__code__


class TimedCallTracer(CandidateTracer):
    """The tracer for timed calls: nothing but the solution runs inside one, so every op is
    the candidate's and no frame walk is needed (it keeps the host ahead of the device)."""

    def __init__(self, extra_allowed: frozenset, expected_stream: int | None):
        super().__init__(frozenset(), extra_allowed, False, expected_stream)

    def _issued_by_candidate(self) -> bool:
        return True


class HostComputeMonitor:
    """A profile hook that sees NumPy and host-transfer calls made from the solution's files.

    It slows the interpreter, so it is active on the repeated and hidden calls only; a
    solution that computes on the host does so on every call.
    """

    def __init__(self, solution_dirs: list[str], active: bool = True) -> None:
        self.solution_dirs = tuple(os.path.realpath(d) + os.sep for d in solution_dirs)
        self.active = active
        self.calls: list[str] = []

    def __enter__(self) -> "HostComputeMonitor":
        if self.active:
            sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        if self.active:
            sys.setprofile(None)

    def _profile(self, frame, event, arg) -> None:
        if event == "c_call":
            module = getattr(arg, "__module__", None) or ""
            name = getattr(arg, "__name__", "")
            is_host = module.startswith("numpy") or name in HOST_TRANSFER_METHODS
            if is_host and frame.f_code.co_filename.startswith(self.solution_dirs):
                self.calls.append(f"{module or 'torch'}.{name}")
        elif event == "call" and "numpy" in frame.f_code.co_filename:
            caller = frame.f_back
            if caller is not None and caller.f_code.co_filename.startswith(self.solution_dirs):
                self.calls.append(f"numpy.{frame.f_code.co_name}")
