"""`controller verify`: run the example model over fixed seeds under an FP32 reference, the
BF16 baseline and a kernel profile, gate the profile's numerics, and on CUDA time the forward
end to end under the profile and `none`, each captured in one CUDA graph, and `stock` as a
PyTorch user deploys it (reduce-overhead), paired and interleaved: a tuned profile that is not
faster than `none` beyond noise fails."""

import datetime
from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field

from controller.verification.float32_reference import (
    Float32Everywhere,
    float32_copy,
    upcast_inputs,
)
from controller.verification.model_gate import (
    OutputVerdict,
    ReferenceCase,
    VerificationError,
    collect_references,
    judge,
)
from examples.deployment import Mode
from examples.paired_timing import PairedTiming

MODEL_SEED = 0
UNTIMED_ON_CPU = "end-to-end timing skipped: it needs CUDA (the Triton interpreter is not timed)"
BUILT_IN_BASELINES = ("none", "stock")
BASELINE_DEPLOYMENT: dict[str, Mode] = {"stock": "reduce-overhead"}
"""How a baseline runs beside the profiles' CUDA graphs: `stock` as a PyTorch user deploys it,
`torch.compile(mode="reduce-overhead", dynamic=False)`, not its eager code in one graph."""


class VerifyReport(BaseModel):
    """What `controller verify` found, written to `--output` as JSON."""

    model_config = ConfigDict(frozen=True)

    profile: str
    model: str = Field(description="the example model and its size, or the parity driver")
    batches: list[int]
    inputs: int
    device: str
    environment: dict[str, str]
    date: str
    passed: bool
    error: str | None = None
    outputs: list[OutputVerdict] = Field(default_factory=list)
    timing: list[PairedTiming] = Field(
        default_factory=list,
        description="per batch, the profile, none and stock timed paired and interleaved (CUDA)",
    )
    speed_failures: list[str] = Field(
        default_factory=list, description="each batch where the profile is not faster than none"
    )
    late_outputs: list[OutputVerdict] = Field(
        default_factory=list,
        description="the same cases judged again once every other forward (the timing's "
        "included) has run: a profile whose outputs change after it was first judged fails",
    )
    notes: list[str] = Field(default_factory=list)


def model_label(size: str | None, driver: str | None) -> str:
    """How a report names the model: a target's parity driver, else the example at a size."""
    return f"driver {driver}" if driver else f"example model {size}"


class ExampleForwards:
    """The example model at one size, run per (batch, seed) under a profile or in FP32."""

    def __init__(self, size, device: torch.device) -> None:
        from examples.model import build_model

        self.size, self.device = size, device
        self.name = model_label(size.name, None)
        self.model = build_model(size, MODEL_SEED, device)
        self._float32 = None

    def inputs(self, batch: int, seed: int):
        from examples.model import make_inputs

        return make_inputs(self.size, batch, seed, self.device)

    def under(self, profile):
        """A (batch, seed) -> outputs forward under `profile` (a name or a KernelSelection)."""
        from operators import use_kernel_profile

        def forward(batch: int, seed: int):
            with use_kernel_profile(profile):
                return _detached(self.model(self.inputs(batch, seed)))

        return forward

    def float32_reference(self, batch: int, seed: int):
        """The references (`torch`) with every tensor in FP32."""
        from operators import use_kernel_profile

        if self._float32 is None:
            self._float32 = float32_copy(self.model)
        with use_kernel_profile("torch"), Float32Everywhere():
            return _detached(self._float32(upcast_inputs(self.inputs(batch, seed))))


class DriverForwards:
    """A target's parity driver, `module:function(batch, seed) -> {name: tensor}`, which builds
    its model from the seed and runs under whatever profile is active. Its FP32 reference is
    the same call under `torch` inside `Float32Everywhere`, so the model is built in FP32 too."""

    def __init__(self, spec: str, device: torch.device) -> None:
        import importlib

        from controller.errors import ControllerError

        module_name, _, function_name = spec.partition(":")
        try:
            self.driver = getattr(importlib.import_module(module_name), function_name)
        except (ImportError, AttributeError, ValueError) as error:
            raise ControllerError(
                f"--driver {spec!r}: cannot import it ({type(error).__name__}); give "
                "module:function taking (batch, seed), e.g. examples.parity:tiny"
            ) from None
        self.name, self.device = model_label(None, spec), device

    def under(self, profile):
        from operators import use_kernel_profile

        def forward(batch: int, seed: int):
            with use_kernel_profile(profile):
                return _detached(self.driver(batch, seed))

        return forward

    def float32_reference(self, batch: int, seed: int):
        from operators import use_kernel_profile

        with use_kernel_profile("torch"), Float32Everywhere():
            return _detached(self.driver(batch, seed))


def _detached(outputs: dict) -> dict:
    return {name: tensor.detach().clone() for name, tensor in outputs.items()}


def reference_cases(forwards: "ExampleForwards | DriverForwards", batches: list[int], inputs: int):
    baselines = [forwards.under("torch"), forwards.under("stock")]
    return collect_references(forwards.float32_reference, baselines, batches, list(range(inputs)))


def verify_profile(
    profile: str,
    selection,
    forwards: "ExampleForwards | DriverForwards",
    batches: list[int],
    inputs: int,
    cases: list[ReferenceCase] | None = None,
    time_it: bool = True,
) -> VerifyReport:
    """Gate `selection` (the profile's KernelSelection) on the model; time it on CUDA; judge
    the cases once more after every other forward. Everything in this process."""
    report = new_report(profile, forwards.name, str(forwards.device), batches, inputs)
    try:
        cases = cases if cases is not None else reference_cases(forwards, batches, inputs)
        verdicts = judge(cases, forwards.under(selection))
    except VerificationError as error:
        return report.model_copy(update={"error": str(error)})
    timing, notes = profile_timing(profile, selection, forwards, batches, time_it)
    late = judge(cases, forwards.under(selection))
    return judged_report(report, verdicts, timing, late, notes)


def new_report(
    profile: str, model: str, device: str, batches: list[int], inputs: int
) -> VerifyReport:
    """The report's header (`model` as `model_label` names it), not yet passed."""
    from operators.environment import current_environment_identity

    return VerifyReport(
        profile=profile,
        model=model,
        batches=batches,
        inputs=inputs,
        device=device,
        environment=current_environment_identity().model_dump(),
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        passed=False,
    )


def profile_timing(
    profile: str, selection, forwards, batches: list[int], time_it: bool
) -> tuple[list[PairedTiming], list[str]]:
    """The model's paired time under the profile, `none` and `stock` per batch (CUDA, the
    example model only), and a note where it was not timed."""
    if not time_it or not isinstance(forwards, ExampleForwards):
        return [], []
    if forwards.device.type != "cuda":
        return [], [UNTIMED_ON_CPU]
    notes: list[str] = []
    timing = [_paired_timing(profile, selection, forwards, batch, notes) for batch in batches]
    return timing, notes


def time_beside_baselines(model, inputs, profiles: dict, pairs: list, notes: list[str]):
    """`time_paired` with the baselines deployed as a user would (BASELINE_DEPLOYMENT); where
    that deployment fails (a compiler error), timed again with every profile in one CUDA
    graph, and a note in `notes` says so. A failure of the profiles' own forwards propagates."""
    from examples.paired_timing import time_paired

    try:
        return time_paired(model, inputs, profiles, pairs, deployed=BASELINE_DEPLOYMENT)
    except Exception as error:  # noqa: BLE001  (any compiler failure; the retry re-raises ours)
        first_line = (str(error).splitlines() or [type(error).__name__])[0][:200]
        notes.append(
            f"batch {inputs.noise.shape[0]}: the baselines could not be deployed as "
            f"{_deployment_words()} ({type(error).__name__}: {first_line}); every profile was "
            "timed as one CUDA graph"
        )
        return time_paired(model, inputs, profiles, pairs)


def _deployment_words() -> str:
    return ", ".join(f"{name} under {mode}" for name, mode in BASELINE_DEPLOYMENT.items())


def judged_report(
    report: VerifyReport,
    verdicts: list[OutputVerdict],
    timing: list[PairedTiming],
    late: list[OutputVerdict],
    notes: list[str],
) -> VerifyReport:
    """The verdict: every output within the gate when first judged and when judged again
    after every other forward (a kernel that turns after a number of calls fails), and,
    where timed, faster than `none` (`speed_failures`)."""
    failures = speed_failures(report.profile, timing)
    changed = [v.name for v in late if not v.passed]
    if changed:
        notes = [*notes, f"judged again after the other forwards, {', '.join(changed)} failed"]
    passed = all(v.passed for v in verdicts) and not failures and not changed
    return report.model_copy(
        update={
            "outputs": verdicts,
            "timing": timing,
            "speed_failures": failures,
            "late_outputs": late,
            "notes": notes,
            "passed": passed,
        }
    )


def _paired_timing(
    profile: str, selection, forwards: ExampleForwards, batch: int, notes: list[str]
):
    from operators import KernelSelection

    profiles = {profile: selection}
    for name in BUILT_IN_BASELINES:
        profiles.setdefault(name, KernelSelection(name))
    pairs = [(profile, name) for name in BUILT_IN_BASELINES if name != profile]
    inputs = forwards.inputs(batch, MODEL_SEED)
    return time_beside_baselines(forwards.model, inputs, profiles, pairs, notes)


def speed_failures(profile: str, timings: list[PairedTiming]) -> list[str]:
    """The model-level latency gate over the timed batches: the profile is faster than `none`
    in every round of at least one batch, and slower than it in every round of none. A kernel
    applies only on the layouts where it won, so at a batch none of them owns the profile runs
    `none`'s code and reads within noise of it; that batch neither passes nor fails it."""
    rows = [(t, ratio) for t in timings if (ratio := t.ratio(profile, "none")) is not None]
    failures = [
        f"batch {t.batch}: {ratio.describe()} is slower beyond noise "
        f"({t.rounds} paired rounds, {t.mode} mode)"
        for t, ratio in rows
        if ratio.slower_beyond_noise
    ]
    if rows and not any(ratio.faster_beyond_noise for _, ratio in rows):
        figures = "; ".join(f"batch {t.batch}: {ratio.describe()}" for t, ratio in rows)
        failures.append(f"faster than none beyond noise at no batch ({figures})")
    return failures


def write_report(report: VerifyReport, output: Path) -> None:
    from controller.runs.store import write_atomic

    write_atomic(output, report.model_dump_json(indent=2) + "\n")
