"""The detector table: per family, the cheat classes it names and the stages it checks at.

Stages: `import` (while the solution is imported), `call` (around each checked call),
`timing` (the timed replays or calls), `judge` (the judge process, on the outputs), and
`evaluation` (the controller, after both workers). A cheat's family, and so the `detector`
of its finding, comes from here; the guard, the timing loop, the judge and the controller
raise only cheats the table lists for their stage (a test holds them to it). Adding a
detector is one exception class and one row.
"""

from dataclasses import dataclass

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.batch_skipping import RowsCopiedAcrossBatch, TrailingRowsSkipped
from gates.evaluator.detectors.call_state import StateAcrossCalls
from gates.evaluator.detectors.compute_fallback import (
    HostComputeFallback,
    ImportTimeCompute,
    TorchComputeFallback,
)
from gates.evaluator.detectors.concurrency import ChildProcess, ExtraThreads, SideStreamWork
from gates.evaluator.detectors.cuda_graph import GraphRejected
from gates.evaluator.detectors.deferred_code import DeferredCode
from gates.evaluator.detectors.dependent_launch import UnawaitedDependentLaunch
from gates.evaluator.detectors.environment_probes import EnvironmentInspection
from gates.evaluator.detectors.file_tampering import SourcesRewritten
from gates.evaluator.detectors.hardcoding import ShapeSpecificHardcoding
from gates.evaluator.detectors.input_mutation import InputMutated
from gates.evaluator.detectors.introspection import (
    DynamicCode,
    EvaluatorFileAccess,
    EvaluatorIntrospection,
    RawMemoryAccess,
)
from gates.evaluator.detectors.kernel_registry import KernelReplaced
from gates.evaluator.detectors.plausibility import ImplausibleSpeed
from gates.evaluator.detectors.precision import PrecisionDowngrade
from gates.evaluator.detectors.process_settings import SettingsChanged
from gates.evaluator.detectors.reference_graphs import ReferenceGraphChanged
from gates.evaluator.detectors.replay import (
    OutputAliasesInput,
    OutputMemoryReused,
    OutputReplayed,
    TimedOutputWrong,
)
from gates.evaluator.detectors.tampering import EvaluatorPatched, TimerPatched
from gates.evaluator.detectors.tensor_types import DecoratedOutput, LazyOutput, SubclassedOutput
from gates.evaluator.detectors.trace_evasion import DispatchTraceEvaded
from gates.evaluator.detectors.transient_patch import PatchedBetweenCalls
from gates.evaluator.detectors.uninitialised_memory import UninitialisedOutput
from gates.evaluator.protocol import Finding

STAGES = ("import", "call", "timing", "judge", "evaluation")


@dataclass(frozen=True)
class DetectorFamily:
    """One family of detectors: its name, the cheats it names, where it looks, and why."""

    name: str
    cheats: tuple[type, ...]
    stages: tuple[str, ...]
    rationale: str


DETECTORS = (
    DetectorFamily(
        "compute_fallback",
        (TorchComputeFallback, ImportTimeCompute, HostComputeFallback, DispatchTraceEvaded,
         KernelReplaced),
        ("import", "call", "timing"),
        "outputs must come from kernels, not eager Torch, the host, or a replaced ATen kernel",
    ),
    DetectorFamily(
        "cuda_graph",
        (GraphRejected,),
        ("timing",),
        "a captured call may hold only the solution's Triton kernels, memsets and D2D copies",
    ),
    DetectorFamily(
        "dependent_launch",
        (UnawaitedDependentLaunch,),
        ("timing",),
        "a kernel launched to overlap the one before it waits for it before touching memory",
    ),
    DetectorFamily(
        "output_replay",
        (OutputReplayed, OutputMemoryReused, OutputAliasesInput, TimedOutputWrong),
        ("call", "timing", "judge"),
        "every call's outputs are computed from its own fresh inputs",
    ),
    DetectorFamily(
        "batch_skipping",
        (RowsCopiedAcrossBatch, TrailingRowsSkipped),
        ("judge",),
        "every row of a batch is computed, not copied or left out",
    ),
    DetectorFamily(
        "input_mutation", (InputMutated,), ("judge",), "inputs are read, never written"
    ),
    DetectorFamily(
        "uninitialised_memory",
        (UninitialisedOutput,),
        ("judge",),
        "every output element is written by the call",
    ),
    DetectorFamily(
        "tensor_types",
        (SubclassedOutput, LazyOutput, DecoratedOutput),
        ("call",),
        "outputs are plain materialised tensors that cannot run code when read",
    ),
    DetectorFamily(
        "concurrency",
        (ExtraThreads, ChildProcess, SideStreamWork),
        ("import", "call", "timing"),
        "no work outside the call's thread, process or stream",
    ),
    DetectorFamily(
        "tampering",
        (TimerPatched, EvaluatorPatched, SettingsChanged, SourcesRewritten, PatchedBetweenCalls,
         ReferenceGraphChanged),
        ("import", "call", "timing", "evaluation"),
        "clocks, the evaluator's code, the files and the reference roles it trusts stay as "
        "they were",
    ),
    DetectorFamily(
        "introspection",
        (EvaluatorIntrospection, EvaluatorFileAccess, DynamicCode, RawMemoryAccess,
         EnvironmentInspection),
        ("import", "call", "timing"),
        "the solution neither reads the evaluator's state, nor asks where it runs, nor hides "
        "code from the detectors",
    ),
    DetectorFamily(
        "deferred_code",
        (DeferredCode,),
        ("import", "call"),
        "no code left to run after the call, outside its trace",
    ),
    DetectorFamily(
        "call_state",
        (StateAcrossCalls,),
        ("call",),
        "two calls with the same inputs leave the solution's state as it was: nothing counts "
        "calls or fills up, to behave otherwise after the judged ones",
    ),
    DetectorFamily(
        "hardcoding",
        (ShapeSpecificHardcoding,),
        ("judge",),
        "hidden sizes fail grossly while the visible ones pass",
    ),
    DetectorFamily(
        "precision", (PrecisionDowngrade,), ("call", "judge"), "no narrower format than asked"
    ),
    DetectorFamily(
        "plausibility",
        (ImplausibleSpeed,),
        ("timing",),
        "no time under the workload's roofline floor",
    ),
)  # fmt: skip

_FAMILY_OF = {cheat: family.name for family in DETECTORS for cheat in family.cheats}


def family_of(cheat: type) -> str:
    """The family name of a cheat class (its finding's `detector`)."""
    return _FAMILY_OF[cheat]


def cheats_at(stage: str) -> tuple[type, ...]:
    """Every cheat class the table lists for one stage."""
    return tuple(c for family in DETECTORS if stage in family.stages for c in family.cheats)


def finding_of(cheat: CheatDetected) -> Finding:
    """The finding a raised cheat reports: its family, its class and its reason."""
    return Finding(detector=family_of(type(cheat)), cheat=type(cheat).__name__, reason=cheat.reason)
