"""The detectors wrapped around the solution inside the candidate process.

Everything the detectors compare against (identities, threads, audit hook) is captured
before the solution is imported; every checked call is traced, poisoned and verified.
"""

import contextlib
import hashlib
import sys
from pathlib import Path

import torch

from gates.evaluator import loading
from gates.evaluator.cases import Case
from gates.evaluator.detectors.call_state import CallState, check_state_unchanged
from gates.evaluator.detectors.compute_fallback import (
    HOST_READ_FUNCTIONS,
    LIBRARY_PRODUCTS,
    HostComputeFallback,
    ImportTimeCompute,
    OpPolicy,
    TorchComputeFallback,
)
from gates.evaluator.detectors.concurrency import (
    SideStreamWork,
    ThreadStartTripwire,
    check_children,
    check_threads,
    os_threads,
    thread_snapshot,
)
from gates.evaluator.detectors.deferred_code import InterpreterHooks, check_attachments
from gates.evaluator.detectors.environment_probes import EnvironmentQueryTripwires
from gates.evaluator.detectors.identity_snapshot import IdentitySnapshot
from gates.evaluator.detectors.introspection import AuditMonitor
from gates.evaluator.detectors.kernel_registry import KernelRegistry, KernelReplaced
from gates.evaluator.detectors.native_mappings import NativeMappings
from gates.evaluator.detectors.precision import PrecisionDowngrade
from gates.evaluator.detectors.process_settings import ProcessSettings
from gates.evaluator.detectors.raw_views import RawViewTripwires
from gates.evaluator.detectors.replay import OutputAliasesInput, OutputMemoryReused
from gates.evaluator.detectors.tampering import (
    EVALUATOR_PATHS,
    TIMER_PATHS,
    WATCHED_CLASSES,
    EvaluatorPatched,
    check_unchanged,
)
from gates.evaluator.detectors.tensor_types import check_output_tensor
from gates.evaluator.detectors.trace_evasion import (
    AtenRecorder,
    DispatchTraceEvaded,
    TraceEvasionTripwires,
)
from gates.evaluator.graph_nodes import cuda_driver
from gates.evaluator.interpreter_autotune import use_first_config
from gates.evaluator.phase_clock import PhaseClock
from gates.evaluator.protocol import CaseRecord
from gates.evaluator.streams import LaunchStreamRecorder
from gates.evaluator.tracing import (
    BENCH_MODULES,
    LAUNCH_MODULES,
    CandidateTracer,
    HostComputeMonitor,
    HostReadRecorder,
    Seal,
    describe_operands,
    foreign_memory,
    triton_code,
)
from gates.evaluator.watched_scope import is_watched, protected_trees, triton_cache_dir
from operators.declaration import as_outputs

REPEAT_SUFFIX = "#repeat"
COMPILE_ERROR_TYPES = ("CompilationError", "CompileTimeAssertionFailure", "PTXASError")


class CandidateCallError(Exception):
    """The candidate raised, or returned outputs of the wrong count, shape, dtype or device."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class CandidateGuard:
    """Imports and calls one solution with every candidate-process detector armed."""

    def __init__(
        self,
        declaration,
        device,
        work: Path,
        sources: Path,
        solution,
        extra_ops,
        protected=(),
        compute_rules: bool = True,
    ):
        self.declaration = declaration
        self.device = device
        self.solution = solution
        self.folder = loading.write_sources(
            solution, loading.deployment_folder(sources, "candidate", solution)
        )
        self.setup_seconds = _warm_up(device)
        self.notes: list[str] = []
        self.library_calls: set[str] = set()  # the BLAS products the candidate called
        if device.type == "cpu":
            use_first_config(self.notes)
        self.extra_ops = frozenset(extra_ops)
        # The verdict's allow-lists, copied now: nothing the solution reaches later widens them.
        self.policy = OpPolicy(
            self.extra_ops, triton_code(LAUNCH_MODULES), triton_code(BENCH_MODULES)
        )
        self.streams = LaunchStreamRecorder(device)
        self.tripwires = TraceEvasionTripwires([str(self.folder)])
        self.thread_starts = ThreadStartTripwire([str(self.folder)])
        self.environment_queries = EnvironmentQueryTripwires([str(self.folder)])
        self.call_state = CallState(str(self.folder))
        self.raw_views = RawViewTripwires()
        evaluator_modules = [m for n, m in sorted(sys.modules.items()) if is_watched(n)]
        self.timers = IdentitySnapshot(TIMER_PATHS, [])
        self.evaluator = IdentitySnapshot(EVALUATOR_PATHS, evaluator_modules, WATCHED_CLASSES)
        self.python_threads, self.main_thread_name = thread_snapshot()
        self.hooks = InterpreterHooks()
        self.native_threads = os_threads()
        self.audit = AuditMonitor(
            [str(self.folder)],
            [str(work)],
            protected_dirs=[*protected_trees(), *map(str, protected)],
            writable_dirs=[str(work), str(sources), triton_cache_dir()],
        )
        self.compute_rules = compute_rules
        """False for the task's own baseline: what it computes and how is not judged."""
        self.kept_outputs: list[torch.Tensor] = []
        self.settings: ProcessSettings | None = None  # copied just before the import
        self.kernels = KernelRegistry()  # after the warm-up: torch's own lazy registrations
        self.native = NativeMappings() if device.type == "cpu" else None

    def watch_more(self, modules: list) -> None:
        """Add modules (the baseline's) to the evaluator snapshot; call before import."""
        self.evaluator = IdentitySnapshot(
            EVALUATOR_PATHS, self.evaluator.modules + modules, WATCHED_CLASSES
        )

    def import_solution(self):
        """Import the candidate with the audit hook armed and ATen compute forbidden."""
        self.settings = ProcessSettings()  # after the reference roles' imports
        self.audit.armed = True
        tracer = CandidateTracer(poison_outputs=False)
        try:
            with tracer:
                function = loading.import_entry(self.solution, self.folder, "candidate")
        except loading.SolutionImportError:
            self.raise_recorded_findings()
            raise
        disallowed = self.policy.disallowed(tracer.facts) if self.compute_rules else []
        if disallowed:
            raise ImportTimeCompute(f"tensor compute at import: {_first(disallowed)}")
        self.check_environment("after import")
        return function

    def raise_recorded_findings(self) -> None:
        """Raise what the hooks recorded (a blocked action surfaces as the solution's error)."""
        self.audit.raise_first()
        self.tripwires.raise_first()
        self.thread_starts.raise_first()
        self.raw_views.raise_first()

    def check_environment(self, when: str) -> None:
        """Audit events, identities, threads: raise the first cheat seen."""
        self.raise_recorded_findings()
        check_unchanged(self.timers, self.evaluator, when)
        if self.settings is not None:
            self.settings.check(when)
        check_threads(self.python_threads, self.native_threads, self.main_thread_name)
        check_children(when)
        self.hooks.check(when)
        replaced = self.kernels.changed()
        if replaced:
            raise KernelReplaced(f"kernels of {', '.join(replaced[:4])} replaced {when}")
        if self.native is not None:
            self.native.check(when)

    def run_cases(self, function, cases: list[Case], pristine: dict):
        """Call every case (twice where asked); returns records, outputs and hidden errors."""
        records, outputs, hidden_errors = [], {}, {}
        for case in cases:
            try:
                produced, inputs_after = self.checked_call(function, case, pristine[case.key])
                repeat_digests = None
                if case.repeat:
                    state = self.call_state.fingerprint()
                    again, _ = self.checked_call(
                        function, case, pristine[case.key], digest_inputs=False
                    )
                    check_state_unchanged(case.key, state, self.call_state.fingerprint())
                    repeat_digests = [tensor_digest(t) for t in again]
                    outputs[case.key + REPEAT_SUFFIX] = again
            except CandidateCallError as error:
                if not case.hidden or error.status == "EVALUATOR_ERROR":
                    raise
                hidden_errors[case.key] = f"{error.status}: {error}"
                continue
            outputs[case.key] = produced
            records.append(
                CaseRecord(
                    key=case.key,
                    input_digests_after=inputs_after,
                    repeat_output_digests=repeat_digests,
                )
            )
        return records, outputs, hidden_errors

    def checked_call(
        self, function, case: Case, pristine: list[torch.Tensor], digest_inputs: bool = True
    ):
        """One traced, poisoned call on fresh copies of the inputs, with every check after it.

        Returns CPU copies of the outputs, made while the inputs are still alive, and the
        inputs' digests after the call (None when not asked: the repeat's are not judged).
        """
        inputs = [_same_layout_copy(t) for t in pristine]
        stream_before = self.streams.current()
        tracer = CandidateTracer(poison_outputs=True, expected_stream=stream_before)
        reads = HostReadRecorder(HOST_READ_FUNCTIONS)
        host = HostComputeMonitor([str(self.folder)])
        recorder = AtenRecorder()
        seals = [Seal(tracer.facts, tracer.tally), Seal(reads.calls, reads.tally)]
        seals.append(Seal(host.calls, host.tally))
        try:
            self.raw_views.active = True
            with self.streams, host, reads, tracer, recorder:
                result = function(*inputs, **self.declaration.params)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
        except Exception as error:
            self.raw_views.active = False
            if tracer.faults:
                fault = f"{case.key}: {tracer.faults[0]}"
                raise CandidateCallError("EVALUATOR_ERROR", fault) from None
            self.raise_recorded_findings()
            status = "COMPILE_ERROR" if _is_compile_error(error) else "RUNTIME_ERROR"
            raise CandidateCallError(status, f"{case.key}: {_describe(error)}") from None
        self.raw_views.active = False
        if tracer.faults:  # the solution swallowed the evaluator's own error
            raise CandidateCallError("EVALUATOR_ERROR", f"{case.key}: {tracer.faults[0]}")
        if not all(seal.intact() for seal in seals):
            raise EvaluatorPatched(f"{case.key}: the evaluator's records of the call were erased")
        self._judge_call(case.key, seals, tracer.seen, recorder)
        self.check_environment(f"during {case.key}")
        check_attachments(case.key, inputs)
        foreign = self.streams.foreign_launches(stream_before)
        foreign += sum(1 for fact in tracer.facts if fact.side_stream)
        if foreign:
            raise SideStreamWork(f"{case.key}: {foreign} launches on another stream")
        produced = self._checked_outputs(case, result, inputs)
        shared = [i for i, t in enumerate([*inputs, *produced]) if foreign_memory(t)]
        if shared:
            raise HostComputeFallback(
                f"{case.key}: host memory (a NumPy view) shares tensors {shared} of the call"
            )
        copies = [t.detach().to("cpu", copy=True) for t in produced]
        return copies, [tensor_digest(t) for t in inputs] if digest_inputs else None

    def _judge_call(self, key: str, seals, seen: set[str], recorder) -> None:
        """The verdict on one call's sealed records, from the policy copied before import."""
        facts, reads, host_calls = (seal.records for seal in seals)
        self.library_calls.update(
            f"{fact.label} {describe_operands(fact.operands)}"
            for fact in facts
            if fact.operands and fact.name in LIBRARY_PRODUCTS
        )
        if not self.compute_rules:
            return
        disallowed = self.policy.disallowed(facts)
        narrowing = [fact.label for fact in facts if fact.narrows]
        casts = [label for label in disallowed if label.split(".")[1] in ("_to_copy", "copy_")]
        if narrowing and len(casts) == len(disallowed):
            raise PrecisionDowngrade(f"{key}: narrowing casts {_first(narrowing)}")
        if disallowed:
            raise TorchComputeFallback(f"{key}: ATen compute {_first(disallowed)}")
        unseen = recorder.unseen_compute(seen, self.extra_ops) or recorder.unrecorded(seen)
        if unseen:
            raise DispatchTraceEvaded(f"{key}: ATen ops the trace did not see: {unseen[:4]}")
        foreign = [fact.label for fact in facts if fact.foreign_memory]
        if foreign:
            raise HostComputeFallback(
                f"{key}: {_first(foreign)} on a tensor over memory torch did not allocate"
            )
        host_reads = self.policy.host_reads(reads)
        if host_reads:
            raise HostComputeFallback(f"{key}: memory handed to the host: {_first(host_reads)}")
        if host_calls:
            raise HostComputeFallback(f"{key}: host compute {_first(host_calls)}")

    def _checked_outputs(self, case: Case, result, inputs) -> list[torch.Tensor]:
        produced = list(as_outputs(result))
        specs = self.declaration.outputs
        if len(produced) != len(specs):
            raise CandidateCallError(
                "INCORRECT_SHAPE", f"{case.key}: {len(produced)} outputs, expected {len(specs)}"
            )
        for spec, tensor in zip(specs, produced, strict=True):
            check_output_tensor(spec.name, tensor, self.device)
            expected_shape = self.declaration.shape_of(spec, case.as_workload())
            if tensor.device.type != self.device.type:
                raise CandidateCallError(
                    "INCORRECT_SHAPE", f"{case.key}: {spec.name} on {tensor.device}"
                )
            if tensor.dtype != spec.torch_dtype:
                raise CandidateCallError(
                    "INCORRECT_DTYPE",
                    f"{case.key}: {spec.name} is {tensor.dtype}, expected {spec.torch_dtype}",
                )
            if tuple(tensor.shape) != expected_shape:
                raise CandidateCallError(
                    "INCORRECT_SHAPE",
                    f"{case.key}: {spec.name} has shape {tuple(tensor.shape)}, "
                    f"expected {expected_shape}",
                )
            if any(_overlaps(tensor, t) for t in inputs):
                raise OutputAliasesInput(f"{case.key}: {spec.name} shares memory with an input")
            if any(_overlaps(tensor, t) for t in self.kept_outputs):
                raise OutputMemoryReused(
                    f"{case.key}: {spec.name} reuses the memory of an earlier output"
                )
        self.kept_outputs.extend(produced)
        return produced

    def disarm(self) -> None:
        self.audit.armed = False


def _same_layout_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A fresh copy with the original's strides (a captured non-row-major layout stays one);
    a broadcast (stride-0) tensor is copied row-major, as `clone` does."""
    if any(
        stride == 0 and size > 1 for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
    ):
        return tensor.clone()
    copy = torch.empty_strided(
        tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device
    )
    return copy.copy_(tensor)


def tensor_digest(tensor: torch.Tensor) -> str:
    """sha256 of a tensor's dtype, shape and bytes (hashed in place, not copied to bytes)."""
    data = tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy()
    digest = hashlib.sha256(f"{tensor.dtype}:{tuple(tensor.shape)}:".encode())
    digest.update(data.data)
    return digest.hexdigest()


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    return a0 < b0 + sb.nbytes() and b0 < a0 + sa.nbytes()


def _warm_up(device: torch.device) -> dict[str, float]:
    """Start the thread pools, drivers and lazy imports honest code would start, before
    counting threads and arming the audit hook; returns seconds per step."""
    clock = PhaseClock()
    a = torch.randn(256, 256)
    with HostReadRecorder(HOST_READ_FUNCTIONS), CandidateTracer(poison_outputs=False):
        (a @ a).sum()
    torch.randn(1 << 20).sum()
    clock.lap("warm_up_cpu")
    with AtenRecorder():  # the profiler's own start-up (threads, libraries) before counting
        torch.empty(1)
    clock.lap("warm_up_profiler")
    if device.type == "cuda":  # the context and its threads; no cuBLAS, which no kernel needs
        torch.randn(256, 256, device=device).sum().item()
        torch.cuda.synchronize()
        with contextlib.suppress(ImportError):  # inspection says so when it is missing
            cuda_driver()  # what graph inspection reads graphs with
        clock.lap("warm_up_cuda")
    return clock.laps


def _is_compile_error(error: BaseException) -> bool:
    return any(type(error).__name__ == name for name in COMPILE_ERROR_TYPES)


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def _first(items: list[str]) -> str:
    unique = list(dict.fromkeys(items))
    more = f" (+{len(unique) - 3} more)" if len(unique) > 3 else ""
    return ", ".join(unique[:3]) + more
