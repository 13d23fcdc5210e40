"""Patching timers, CUDA events, synchronisation, or the evaluator's own code.

Identities (object and code object) of everything timing and judging relies on are taken
before the solution is imported and compared after the import, after every checked call
and around the reading of the timing events.
"""

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.identity_snapshot import IdentitySnapshot


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
    "torch.cuda.CUDAGraph.instantiate",  # graph timing instantiates each graph it captures
    "torch.cuda.CUDAGraph.raw_cuda_graph",  # ... and inspects its nodes through this
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
# output after the traced call, so a replaced one would run solution code untraced; and graph
# timing captures, instantiates, inspects and replays every role's calls through the graph
# class, so a replaced method could time or show a graph other than the one judged.
WATCHED_CLASSES = (
    "torch.Tensor",
    "torch._C.TensorBase",
    "torch.UntypedStorage",
    "torch._C.StorageBase",
    "torch.cuda.CUDAGraph",
    "torch._C._CUDAGraph",
)


def check_unchanged(timers: IdentitySnapshot, evaluator: IdentitySnapshot, when: str) -> None:
    """Raise the matching cheat if either snapshot changed."""
    changed = timers.changed()
    if changed:
        raise TimerPatched(f"{', '.join(changed[:4])} replaced {when}")
    changed = evaluator.changed()
    if changed:
        raise EvaluatorPatched(f"{', '.join(changed[:4])} replaced {when}")
