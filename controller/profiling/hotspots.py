"""Where a driver's step goes: device time per registry operator, per module and other region,
the time outside registry calls, the idle gaps between kernels, and how the whole account
compares to the step's wall time measured in the same mode.

On CUDA the time is each kernel's device time, attributed through the launch call that the
profiler correlates with it (see `attribution`); a replayed graph's kernels are labelled by the
ranges open when they were captured (see `graph_labels`). Without CUDA, the host time of each
registry call and of each top-level ATen call outside one stands in, and the report says so.
"""

import bisect
import statistics
from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict

from controller.profiling.attribution import (
    STEP_RANGE,
    RegionKind,
    WorkItem,
    device_work,
    host_work,
    step_ranges,
)
from controller.profiling.eager_timing import LEAD_IN_STEPS, Retimed, retime
from controller.profiling.graph_labels import CAPTURE_RANGE, GraphLabelling, replayed_work
from controller.profiling.profiled_run import ProfiledRun, WallTime
from controller.profiling.step_account import GAP_KINDS, GapKind, step_windows
from controller.profiling.timeline import HostRange, Timeline

LAUNCH_BOUND_US = 5.0
AGREEMENT_GOAL = 0.05  # the account of a step within 5% of its wall time


class RegionTime(BaseModel):
    """One region's share of a step: a registry operator, an attention call, a module."""

    model_config = ConfigDict(frozen=True)

    region: str
    kind: RegionKind
    calls_per_step: float
    kernels_per_step: float
    kernel_us_per_step: float
    share_of_step: float
    mean_kernel_us: float
    share_under_5us: float


class GapTime(BaseModel):
    """The idle gaps of one kind in a step's window."""

    model_config = ConfigDict(frozen=True)

    kind: GapKind
    gaps_per_step: float
    us_per_step: float
    share_of_step: float


class StepAccount(BaseModel):
    """Kernel time plus gaps per step (the account), against the wall time of the step:
    `agreement` is account / unprofiled wall - 1, `profiled_agreement` the same against the
    profiled steps' own wall time (a check that nothing in the window went uncounted)."""

    model_config = ConfigDict(frozen=True)

    busy_us_per_step: float
    gap_us_per_step: float
    account_us_per_step: float
    wall: WallTime
    agreement: float
    profiled_agreement: float
    within_goal: bool


class HotspotReport(BaseModel):
    """A profile of a driver's step, ranked, with the step accounted for in full."""

    model_config = ConfigDict(frozen=True)

    driver: list[str]
    mode: Literal["eager", "graph"]
    kernel_profile: str = "none"
    """The kernel profile the driver ran under (`controller profile --kernel-profile`)."""
    device_attribution: bool
    note: str
    warmup: int
    steps: int
    lead_in: int = 0
    registry: list[RegionTime]
    elsewhere: list[RegionTime]
    registry_us_per_step: float
    outside_registry_us_per_step: float
    gaps: list[GapTime]
    account: StepAccount
    graph: GraphLabelling | None = None

    @property
    def regions(self) -> list[RegionTime]:
        """Every region, longest first."""
        rows = [*self.registry, *self.elsewhere]
        return sorted(rows, key=lambda row: (-row.kernel_us_per_step, row.region))


def build_report(
    run: ProfiledRun, driver: list[str], kernel_profile: str = "none"
) -> HotspotReport:
    """Attribute, account for and rank one profiled run (made under `kernel_profile`)."""
    timeline, graph = run.timeline, None
    steps = step_ranges(timeline)
    lead_in, waits = run.lead_in, timeline.waits
    if run.mode == "graph":
        work, graph = replayed_work(timeline)
        call_windows = [item for item in timeline.ranges if item.name == CAPTURE_RANGE]
        note = "device time of each replayed kernel, labelled by the ranges of its capture"
    elif run.device == "cuda":
        work, call_windows = device_work(timeline), steps
        note = "device time of each kernel, attributed through the call that launched it"
        if run.timing is not None:
            retimed = retime(work, run.timing, len(steps))
            if isinstance(retimed, Retimed):
                work, steps, lead_in, waits = retimed.work, retimed.steps, LEAD_IN_STEPS, []
                note += (
                    "; the times are a second pass's that traced only the device, matched "
                    "kernel by kernel (its gaps are the host's time without the profiler's)"
                )
            else:
                note += f"; the labelled pass's own times ({retimed})"
    else:
        work, call_windows = host_work(timeline), steps
        note = (
            "no CUDA here: device attribution needs CUDA; the host time of registry calls and "
            "of top-level ATen calls outside them stands in for kernels"
        )
    windows = step_windows(steps, work, waits)[lead_in:]
    counted = [item for item in work if item.step is not None and item.step >= lead_in]
    count = max(len(windows), 1)
    account = statistics.fmean(window.account_us for window in windows) if windows else 0.0
    rows = _region_rows(counted, _calls_per_window(timeline, call_windows), count, account)
    gap_rows = []
    for kind in GAP_KINDS:
        gaps = [gap for window in windows for gap in window.gaps if gap.kind == kind]
        if gaps:
            total = sum(gap.duration_us for gap in gaps) / count
            gap_rows.append(
                GapTime(
                    kind=kind,
                    gaps_per_step=len(gaps) / count,
                    us_per_step=total,
                    share_of_step=_share(total, account),
                )
            )
    registry = [row for row in rows if row.kind == "registry"]
    elsewhere = [row for row in rows if row.kind != "registry"]
    agreement = _ratio(account, run.wall.unprofiled_median_us)
    return HotspotReport(
        driver=driver,
        mode=run.mode,
        kernel_profile=kernel_profile,
        device_attribution=run.device == "cuda",
        note=note,
        warmup=run.warmup,
        steps=run.steps,
        lead_in=lead_in,
        registry=registry,
        elsewhere=elsewhere,
        registry_us_per_step=sum(row.kernel_us_per_step for row in registry),
        outside_registry_us_per_step=sum(row.kernel_us_per_step for row in elsewhere),
        gaps=gap_rows,
        account=StepAccount(
            busy_us_per_step=sum(window.busy_us for window in windows) / count,
            gap_us_per_step=sum(row.us_per_step for row in gap_rows),
            account_us_per_step=account,
            wall=run.wall,
            agreement=agreement,
            profiled_agreement=_ratio(account, run.wall.profiled_median_us),
            within_goal=abs(agreement) <= AGREEMENT_GOAL,
        ),
        graph=graph,
    )


def _region_rows(
    work: list[WorkItem], calls: Counter, count: int, account: float
) -> list[RegionTime]:
    durations: dict[tuple[str, RegionKind], list[float]] = {}
    for item in work:
        if item.step is not None:
            durations.setdefault((item.region, item.region_kind), []).append(item.duration_us)
    rows = []
    for (region, kind), times in durations.items():
        total = sum(times) / count
        rows.append(
            RegionTime(
                region=region,
                kind=kind,
                calls_per_step=calls[region],
                kernels_per_step=len(times) / count,
                kernel_us_per_step=total,
                share_of_step=_share(total, account),
                mean_kernel_us=sum(times) / len(times),
                share_under_5us=sum(time < LAUNCH_BOUND_US for time in times) / len(times),
            )
        )
    return sorted(rows, key=lambda row: (-row.kernel_us_per_step, row.region))


def _calls_per_window(timeline: Timeline, windows: list[HostRange]) -> Counter:
    """How many ranges of each name started inside the windows, per window."""
    ordered = sorted(windows, key=lambda item: item.start_us)
    starts = [item.start_us for item in ordered]
    counts: Counter = Counter()
    for item in timeline.ranges:
        index = bisect.bisect_right(starts, item.start_us) - 1
        if item.name in (STEP_RANGE, CAPTURE_RANGE) or index < 0:
            continue
        if item.start_us < ordered[index].end_us:
            counts[item.name] += 1
    return Counter({name: total / max(len(ordered), 1) for name, total in counts.items()})


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _ratio(account: float, wall: float) -> float:
    return account / wall - 1.0 if wall else 0.0
