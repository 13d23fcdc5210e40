"""Watch one candidate call: the facts of each ATen op it runs, its fresh allocations, the
torch functions that hand memory to the host, and its host compute.

The tracers record facts only (op name, the library frames that issued it, whether a copy
keeps values, whether a tensor lies over memory torch did not allocate); the verdict comes
afterwards from an `OpPolicy` copied before the import. Fresh allocations are poisoned
before the candidate sees them.
"""

import itertools
import os
import sys
import types
from dataclasses import dataclass

import torch
import triton
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from gates.evaluator.detectors.compute_fallback import (
    HOST_TRANSFER_METHODS,
    LIBRARY_PRODUCTS,
    copy_keeps_values,
)
from gates.evaluator.detectors.precision import narrows_precision
from gates.evaluator.detectors.uninitialised_memory import poison

POISONED_ALLOCATIONS = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
)


def package_roots(module: types.ModuleType) -> tuple[str, ...]:
    """A package's folder as it was imported, which its code objects' `co_filename` start
    with, and as resolved: a virtual environment reached through a symbolic link (a checkout
    whose `.venv` links to another's) names the same files by two paths, and a frame walk that
    knew only the resolved one took every torch frame for the candidate's own code."""
    folder = os.path.dirname(module.__file__)
    return tuple(dict.fromkeys(path + os.sep for path in (folder, os.path.realpath(folder))))


TRITON_ROOTS = package_roots(triton)
LIBRARY_ROOTS = package_roots(torch) + TRITON_ROOTS
LAUNCH_MODULES = ("triton.runtime.interpreter", "triton.runtime.autotuner")
BENCH_MODULES = ("triton.testing",)


@dataclass(frozen=True, slots=True)
class OpFact:
    """One ATen op of a call, as the tracer saw it."""

    name: str
    overload: str
    label: str
    library_code: tuple  # code objects of the Triton frames between the op and its issuer
    keeps_values: bool
    narrows: bool
    side_stream: bool
    foreign_memory: bool
    operands: tuple = ()  # a replayable op's tensors: (dtype, shape, stride, offset bytes)
    keywords: tuple = ()  # its other keyword arguments, as sorted (name, value) pairs


class Seal:
    """A record list and the count of records put into it, taken before a call: records the
    solution erases, or a list it swaps in, leave the count and the list apart."""

    def __init__(self, records: list, tally) -> None:
        self.records, self.tally = records, tally

    def intact(self) -> bool:
        return len(self.records) == int(repr(self.tally)[6:-1])


class EvaluatorFault(Exception):
    """The evaluator's own code failed while watching a call; never the solution's fault."""


def triton_code(modules: tuple[str, ...]) -> frozenset:
    """Code objects of the named Triton modules (their functions, methods, nested code)."""
    import importlib

    codes: set = set()
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        _collect_code(vars(module), codes, module.__name__, set())
    return frozenset(codes)


def triton_internal_code() -> frozenset:
    """Code objects of Triton's interpreter, autotuner and benchmarking helpers."""
    return triton_code(LAUNCH_MODULES + BENCH_MODULES)


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


def foreign_memory(value) -> bool:
    """True for a tensor whose storage torch did not allocate (NumPy, `frombuffer`, DLPack)
    or that a NumPy view now shares: torch marks such storages not resizable."""
    if not isinstance(value, torch.Tensor) or value.is_meta:
        return False
    try:
        return not value.untyped_storage().resizable()
    except (RuntimeError, NotImplementedError):
        return False


def operand_layouts(args) -> tuple:
    """Each tensor argument's dtype, shape, strides and address modulo 256 bytes: what the
    BLAS library chooses its kernel by."""
    return tuple(
        (t.dtype, tuple(t.shape), tuple(t.stride()), _alignment(t))
        for t in args
        if isinstance(t, torch.Tensor)
    )


def _alignment(tensor: torch.Tensor) -> int:
    try:
        return tensor.data_ptr() % 256
    except RuntimeError:  # no storage (meta): nothing to align
        return 0


def plain_keywords(kwargs: dict) -> tuple:
    """Keyword arguments that are not tensors (memory format, dtype, device), hashable."""
    return tuple(
        sorted((key, value) for key, value in kwargs.items() if not isinstance(value, torch.Tensor))
    )


def describe_operands(operands: tuple) -> str:
    """`bfloat16[50, 1024] x bfloat16[1024, 4096]/(1, 1024)`: a library call's operands, for
    the evidence (strides where the operand is not contiguous)."""
    parts = []
    for dtype, shape, stride, _ in operands:
        contiguous = _contiguous_strides(shape)
        text = f"{str(dtype).removeprefix('torch.')}{list(shape)}"
        parts.append(text if stride == contiguous else f"{text}/{stride}")
    return " x ".join(parts)


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


class CandidateTracer(TorchDispatchMode):
    """Records the facts of every ATen op of a call and poisons its fresh allocations."""

    def __init__(self, poison_outputs: bool, expected_stream: int | None = None):
        super().__init__()
        self.expected_stream = expected_stream
        self.poison_outputs = poison_outputs
        self.facts: list[OpFact] = []
        self.tally = itertools.count()  # only goes up: see `Seal`
        self.faults: list[str] = []

    @property
    def seen(self) -> set[str]:
        """Every op name recorded (for the profiler cross-check)."""
        return {fact.name for fact in self.facts}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        try:
            self.facts.append(self._fact(func, args, kwargs, result))
            next(self.tally)
            name = func.overloadpacket.__name__
            if self.poison_outputs and name in POISONED_ALLOCATIONS:
                poison(result)
        except Exception as error:  # a fault of the evaluator, not of the solution
            self.faults.append(f"{func}: {type(error).__name__}: {error}"[:300])
            raise EvaluatorFault(self.faults[-1]) from None
        return result

    def _fact(self, func, args, kwargs, result) -> OpFact:
        name = func.overloadpacket.__name__
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        tensors += [r for r in (result if isinstance(result, tuple | list) else (result,))]
        keeps = name in ("clone", "contiguous", "copy_", "_to_copy") and copy_keeps_values(
            name, args, kwargs
        )
        replayable = name in LIBRARY_PRODUCTS or keeps  # library kernels a graph may hold
        return OpFact(
            name=name,
            overload=func._overloadname,
            label=str(func),
            library_code=self._library_code(),
            keeps_values=keeps,
            narrows=narrows_precision(name, args, kwargs, result),
            side_stream=self.expected_stream is not None and self._on_side_stream(),
            foreign_memory=any(foreign_memory(t) for t in tensors),
            operands=operand_layouts(args) if replayable else (),
            keywords=plain_keywords(kwargs) if replayable else (),
        )

    def _on_side_stream(self) -> bool:
        return torch.cuda.current_stream().cuda_stream != self.expected_stream

    def _library_code(self) -> tuple:
        """The Triton frames between the op and the first frame outside torch and Triton."""
        found = []
        frame = sys._getframe(3)
        while frame is not None:
            code = frame.f_code
            filename = code.co_filename
            if filename.startswith(TRITON_ROOTS):
                found.append(code)
            elif not (filename.startswith(LIBRARY_ROOTS + ("<frozen",)) or code is _DISPATCH_CODE):
                break
            frame = frame.f_back
        return tuple(found)


_DISPATCH_CODE = CandidateTracer.__torch_dispatch__.__code__


class TimedCallTracer(CandidateTracer):
    """The tracer for timed calls: nothing but the solution runs inside one, so every op is
    the candidate's and no frame walk is needed (it keeps the host ahead of the device)."""

    def __init__(self, expected_stream: int | None):
        super().__init__(False, expected_stream)

    def _library_code(self) -> tuple:
        return ()


class HostReadRecorder(TorchFunctionMode):
    """Records torch functions that hand tensor memory to the host (`tolist`, `numpy`,
    `__array__`, `__dlpack__`). A torch function mode sees them however they are reached
    (through `map`, the C base class, a hook), where a profile hook sees only calls from
    Python frames; Triton's launcher calls none of them."""

    def __init__(self, watched: frozenset[str]) -> None:
        super().__init__()
        self.watched = watched
        self.calls: list[str] = []
        self.tally = itertools.count()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.watched:
            self.calls.append(name)
            next(self.tally)
        return func(*args, **(kwargs or {}))


class HostComputeMonitor:
    """A profile hook that sees NumPy and host-transfer calls made from the solution's files.

    It is on for every checked call, so a solution cannot find a call it does not watch.
    """

    def __init__(self, solution_dirs: list[str]) -> None:
        self.solution_dirs = tuple(os.path.realpath(d) + os.sep for d in solution_dirs)
        self.calls: list[str] = []
        self.tally = itertools.count()

    def __enter__(self) -> "HostComputeMonitor":
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(None)

    def _profile(self, frame, event, arg) -> None:
        # Called for every Python and C call (the interpreter makes thousands): the caller's
        # file is asked last, as reading `frame.f_code` is an audit event.
        if event == "c_call":
            module = getattr(arg, "__module__", None) or ""
            name = getattr(arg, "__name__", "")
            is_host = module.startswith("numpy") or name in HOST_TRANSFER_METHODS
            if is_host and frame.f_code.co_filename.startswith(self.solution_dirs):
                self.calls.append(f"{module or 'torch'}.{name}")
                next(self.tally)
        elif event == "call" and "numpy" in frame.f_code.co_filename:
            caller = frame.f_back
            if caller is not None and caller.f_code.co_filename.startswith(self.solution_dirs):
                self.calls.append(f"numpy.{frame.f_code.co_name}")
                next(self.tally)
