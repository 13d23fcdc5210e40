"""End-to-end latency of the example model's forward, per kernel profile and deployment mode.

Each row deploys the forward (compiles or captures it), checks its outputs within the
contract-derived expectation, then times it: CUDA events around each forward on a GPU (the
host clock on a CPU), after warm-up calls; the median is reported. `eager` and `graph` run
PyTorch's own kernels, so their outputs are held to the references' eager outputs. Inductor
rewrites the plain PyTorch parts too (fusions round differently), so a compiled mode's outputs
are held to the references' outputs in that same mode, which run first. A mode that fails is a
row with its error, so one failure never hides the others.

Every row is also a ratio against `stock`, what a PyTorch user deploys without this project
(its fastest timed row), and on a GPU the report states two floors: the time to read every
weight once per use at the device's measured copy bandwidth, and the time the references'
products and attention take at the device's measured rate for one large BF16 product.
"""

import datetime
import statistics
import time
from collections.abc import Callable

import torch
from pydantic import BaseModel, ConfigDict, Field

from examples.byte_floor import ByteFloor, byte_floor
from examples.compute_floor import ComputeFloor, compute_floor
from examples.config import ExampleSize
from examples.deployment import Mode, deploy
from examples.expectation import compare_outputs, registry_calls_per_output
from examples.model import build_model, make_inputs
from examples.paired_timing import call_times
from operators import use_kernel_profile
from operators.environment import EnvironmentIdentity, current_environment_identity

COMPILED_MODES = ("compile", "reduce-overhead")


class ForwardTiming(BaseModel):
    """One profile in one mode: how long preparing took, whether outputs held, the latency."""

    model_config = ConfigDict(frozen=True)

    profile: str
    mode: str
    prepare_seconds: float = Field(description="compiling or capturing, warm-up included")
    checked_against: str = Field(default="", description="whose outputs the check compared with")
    within_expectation: bool | None = None
    outside: list[str] = Field(default_factory=list, description="outputs past their bound")
    median_ms: float | None = None
    min_ms: float | None = None
    samples: int = 0
    speedup_vs_stock: float | None = Field(
        default=None, description="the stock figure's median over this row's (above 1: faster)"
    )
    error: str | None = Field(default=None, description="why this mode did not run")


class TimingReport(BaseModel):
    """Every row of one `controller example run --time`, with what it ran on."""

    model_config = ConfigDict(frozen=True)

    size: str
    batch: int
    seed: int
    device: str
    environment: EnvironmentIdentity
    date: str
    iterations: int
    warmup: int
    clock: str
    rows: list[ForwardTiming]
    stock: str | None = Field(
        default=None, description="the row every speedup is against: stock's fastest mode"
    )
    floor: ByteFloor | None = Field(default=None, description="the byte floor (CUDA only)")
    compute_floor: ComputeFloor | None = Field(
        default=None, description="the products' floor (CUDA only)"
    )

    def with_stock_ratios(self) -> "TimingReport":
        """The report with `stock` set to stock's fastest timed row and each row's ratio to it."""
        timed = [r for r in self.rows if r.profile == "stock" and r.median_ms is not None]
        if not timed:
            return self
        stock = min(timed, key=lambda row: row.median_ms)
        rows = [
            row.model_copy(update={"speedup_vs_stock": round(stock.median_ms / row.median_ms, 3)})
            if row.median_ms
            else row
            for row in self.rows
        ]
        return self.model_copy(update={"rows": rows, "stock": f"stock, {stock.mode}"})


def time_example(
    size: ExampleSize,
    batch: int,
    seed: int,
    device: torch.device,
    profiles: list[str],
    modes: list[Mode],
    iterations: int,
    warmup: int,
    on_row: Callable[[TimingReport], None] = lambda report: None,
) -> TimingReport:
    """Time every (profile, mode); `on_row` sees the report after each row (to save it)."""
    model = build_model(size, seed, device)
    inputs = make_inputs(size, batch, seed, device)
    with use_kernel_profile("torch"):
        reference = model(inputs)
        calls = registry_calls_per_output(model, inputs)
    clock = "CUDA events around each forward" if device.type == "cuda" else "host clock"
    report = TimingReport(
        size=size.name,
        batch=batch,
        seed=seed,
        device=str(device),
        environment=current_environment_identity(),
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        iterations=iterations,
        warmup=warmup,
        clock=f"{clock}, median of {iterations} after {warmup} warm-up calls",
        rows=[],
        floor=byte_floor(model, device),
        compute_floor=compute_floor(size, batch, device),
    )
    for mode in modes:
        mode_reference, against = reference, "torch, eager"
        if mode in COMPILED_MODES and "torch" in profiles:
            mode_reference, against = None, f"none: the references of {mode}"
        for profile in sorted(profiles, key=lambda name: name != "torch"):  # torch first
            with use_kernel_profile(profile):
                row, outputs, forward = _checked_row(
                    model, inputs, mode_reference, against, calls, profile, mode
                )
                if forward is not None:
                    row = _timed(row, forward, inputs, iterations, warmup)
            if profile == "torch" and mode in COMPILED_MODES:  # the mode's reference is known
                compiled = row.error is None
                mode_reference = outputs if compiled else reference
                against = f"torch, {mode}" if compiled else "torch, eager"
            torch._dynamo.reset()
            report = report.model_copy(update={"rows": [*report.rows, row]}).with_stock_ratios()
            on_row(report)
    return report


def _checked_row(model, inputs, reference, against, calls, profile, mode):
    """The row before timing (or with its error), the deployed forward and its outputs."""
    started = time.perf_counter()
    try:
        forward = deploy(model, mode, inputs)
        outputs = {name: tensor.clone() for name, tensor in forward(inputs).items()}
    except Exception as error:  # a mode that cannot run is reported, the others still run
        row = ForwardTiming(profile=profile, mode=mode, prepare_seconds=0.0, error=_summary(error))
        return row, None, None
    prepare_seconds = round(time.perf_counter() - started, 2)
    if reference is None:  # this row is its mode's reference
        row = ForwardTiming(
            profile=profile, mode=mode, prepare_seconds=prepare_seconds, checked_against=against
        )
        return row, outputs, forward
    comparisons = compare_outputs(reference, outputs, calls)
    outside = [comparison.name for comparison in comparisons if not comparison.within]
    row = ForwardTiming(
        profile=profile,
        mode=mode,
        prepare_seconds=prepare_seconds,
        checked_against=against,
        within_expectation=not outside,
        outside=outside,
    )
    return row, outputs, forward


def _timed(row: ForwardTiming, forward, inputs, iterations: int, warmup: int) -> ForwardTiming:
    milliseconds = _latencies(forward, inputs, iterations, warmup)
    return row.model_copy(
        update={
            "median_ms": round(statistics.median(milliseconds), 3),
            "min_ms": round(min(milliseconds), 3),
            "samples": len(milliseconds),
        }
    )


def _summary(error: Exception) -> str:
    """The first and the last line of an error: Inductor's first line names only the wrapper."""
    lines = [line.strip() for line in f"{type(error).__name__}: {error}".splitlines()]
    lines = [line for line in lines if line]
    summary = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return summary[:400]


def _latencies(forward, inputs, iterations: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        forward(inputs)
    return call_times(forward, inputs, iterations)
