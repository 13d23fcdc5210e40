"""Patching timers, CUDA events, synchronisation, or the evaluator's own code.

Identities (object and code object) of everything timing and judging relies on are taken
before the solution is imported and compared after the import, after every checked call
and around the reading of the timing events.
"""

import sys
import types

from gates.evaluator.detectors import CheatDetected


class TimerPatched(CheatDetected):
    """A clock, CUDA event, stream or synchronisation function was replaced or rewritten."""


class EvaluatorPatched(CheatDetected):
    """A function of the evaluator, the baseline or the serialisation it uses was replaced."""


TIMER_PATHS = (
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.time",
    "time.time_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.process_time",
    "torch.cuda.Event",
    "torch.cuda.Event.record",
    "torch.cuda.Event.elapsed_time",
    "torch.cuda.Event.synchronize",
    "torch.cuda.Event.query",
    "torch.cuda.Event.wait",
    "torch.cuda.synchronize",
    "torch.cuda.current_stream",
    "torch.cuda.default_stream",
    "torch.cuda.set_stream",
    "torch.cuda.stream",
    "torch.cuda.Stream",
    "torch.cuda.Stream.wait_event",
    "torch.cuda.Stream.synchronize",
    "torch.cuda.CUDAGraph",
    "torch.cuda.CUDAGraph.replay",
    "torch.cuda.graph",
    "torch._C._CudaEventBase",
    "torch._C._cuda_synchronize",
    "triton.testing.do_bench",
    "triton.runtime.driver.driver",
    "triton.runtime.driver.driver.active.get_current_stream",
)
EVALUATOR_PATHS = (
    "torch.save",
    "torch.load",
    "torch.equal",
    "torch.empty",
    "torch.empty_like",
    "torch.Tensor.clone",
    "torch.Tensor.copy_",
    "torch.Tensor.zero_",
    "torch.Tensor.cpu",
    "torch.Tensor.contiguous",
    "torch.Tensor.view",
    "torch.Tensor.numpy",
    "torch.Tensor.data_ptr",
    "torch.Tensor.untyped_storage",
    "torch.allclose",
    "torch.isclose",
    "torch.testing.assert_close",
    "torch.Tensor.allclose",
    "torch.Tensor.equal",
    "math.isclose",
    "numpy.allclose",
    "numpy.array_equal",
    "numpy.testing.assert_allclose",
    "operator.eq",
    "torch.Tensor.__eq__",
    "torch.Tensor.__ne__",
    "torch.Tensor.any",
    "torch.Tensor.to",
    "torch._C._DisableTorchDispatch",
    "torch._C._ExcludeDispatchKeyGuard",
    "torch.utils._python_dispatch._disable_current_modes",
    "torch.utils._python_dispatch.TorchDispatchMode",
    "torch.utils._python_dispatch._push_mode",
    "torch.utils._python_dispatch._pop_mode",
    "torch.utils._python_dispatch._get_current_dispatch_mode",
    "json.dumps",
    "json.loads",
    "hashlib.sha256",
    "os.replace",
    "os.fsync",
    "os._exit",
    "sys.stdout",
    "sys.stderr",
    "os.open",
    "os.write",
    "os.close",
    "os.fdopen",
    "io.open",
    "tempfile.mkstemp",
    "pickle.Pickler",
    "pickle.dump",
    "zipfile.ZipFile",
    "torch.serialization.save",
    "pydantic.BaseModel.model_dump_json",
    "pydantic.BaseModel.model_dump",
    "weakref.finalize",
    "torch._C._disabled_torch_function_impl",
    "signal.signal",
    "gc.collect",
    "builtins.open",
    "builtins.__import__",
    "builtins.__build_class__",
    "builtins.isinstance",
    "builtins.type",
    "sys.setprofile",
    "sys.settrace",
    "gc.disable",
    "gc.enable",
    "threading.enumerate",
    "threading.Thread.start",
)


# Classes whose every attribute is watched: the evaluator calls tensor methods on every
# output after the traced call, so a replaced one would run solution code untraced.
WATCHED_CLASSES = (
    "torch.Tensor",
    "torch._C.TensorBase",
    "torch.UntypedStorage",
    "torch._C.StorageBase",
)


class IdentitySnapshot:
    """Identities of named objects and of every attribute of watched modules and classes."""

    def __init__(
        self,
        paths: tuple[str, ...],
        modules: list[types.ModuleType],
        classes: tuple[str, ...] = (),
    ) -> None:
        self.paths = paths
        self.modules = modules
        self.classes = classes
        self.recorded = self._take()

    def _take(self) -> dict[str, tuple]:
        taken = {path: _identity(_resolve(path)) for path in self.paths}
        for path in self.classes:
            for attribute, member in list(vars(_resolve(path)).items()):
                taken[f"{path}.{attribute}"] = _identity(member)
        for module in self.modules:
            for name, value in list(vars(module).items()):
                if name.startswith("__") and name != "__call__":
                    continue
                taken[f"{module.__name__}.{name}"] = _identity(value)
                if isinstance(value, type) and value.__module__ == module.__name__:
                    for attribute, member in list(vars(value).items()):
                        taken[f"{module.__name__}.{name}.{attribute}"] = _identity(member)
        return taken

    def changed(self) -> list[str]:
        """Names whose identity differs from the snapshot (added and removed ones too)."""
        now = self._take()
        if now == self.recorded:  # the usual case, compared in C
            return []
        names = set(now) | set(self.recorded)
        return sorted(n for n in names if now.get(n) != self.recorded.get(n))


def check_unchanged(timers: IdentitySnapshot, evaluator: IdentitySnapshot, when: str) -> None:
    """Raise the matching cheat if either snapshot changed."""
    changed = timers.changed()
    if changed:
        raise TimerPatched(f"{', '.join(changed[:4])} replaced {when}")
    changed = evaluator.changed()
    if changed:
        raise EvaluatorPatched(f"{', '.join(changed[:4])} replaced {when}")


def _resolve(path: str):
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:split]))
        if module is not None:
            value = module
            for attribute in parts[split:]:
                try:
                    value = getattr(value, attribute, None)
                except Exception:  # a lazy attribute that cannot start here (no GPU driver)
                    return None
            return value
    return None


def _identity(value) -> tuple:
    """The object's id, plus its code and defaults for functions and wrapped functions (a
    rewritten `__code__` keeps the function object). Kept cheap: thousands per check."""
    kind = type(value)
    if kind is types.FunctionType:
        return (id(value), id(value.__code__), id(value.__defaults__))
    if kind is classmethod or kind is staticmethod or kind is types.MethodType:
        function = value.__func__
        code = getattr(function, "__code__", None)
        # a bound method is made afresh at every lookup: its owner stands in for its id
        holder = value.__self__ if kind is types.MethodType else value
        return (id(holder), id(function), id(code), id(getattr(function, "__defaults__", None)))
    return (id(value),)
