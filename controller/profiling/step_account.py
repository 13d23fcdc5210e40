"""Where a whole step's time went: the device busy with work, and the idle gaps between
(launch cost, the host waiting, graph launch), so that the parts add up to the step and can be
held against the forward's wall time.

A step's window opens when both the host has started it and the device has finished the step
before (a CUDA event recorded before the step starts then), and closes when both the host has
returned and the device has finished the step's last kernel (an event recorded after it).
"""

import bisect
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from controller.profiling.attribution import WorkItem
from controller.profiling.timeline import HostRange, HostWait

GapKind = Literal[
    "before the first kernel", "between kernels", "after a host wait", "after the last kernel"
]
GAP_KINDS: tuple[GapKind, ...] = (
    "before the first kernel",
    "between kernels",
    "after a host wait",
    "after the last kernel",
)
# A wait that returned this long before the device went idle still explains the gap (the
# host and device clocks agree to about a microsecond).
WAIT_CLOCK_SLACK_US = 2.0


class Gap(BaseModel):
    """An interval of a step's window in which the device ran none of its work."""

    model_config = ConfigDict(frozen=True)

    kind: GapKind
    start_us: float
    end_us: float

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us


class StepWindow(BaseModel):
    """One step: its window, the time the device was busy with it and the gaps."""

    model_config = ConfigDict(frozen=True)

    step: int
    start_us: float
    end_us: float
    busy_us: float
    gaps: list[Gap]

    @property
    def account_us(self) -> float:
        return self.end_us - self.start_us


def step_windows(
    steps: Sequence[HostRange], work: Sequence[WorkItem], waits: Sequence[HostWait] = ()
) -> list[StepWindow]:
    """The window, busy time and gaps of each step (work items carry their step index)."""
    by_step: dict[int, list[WorkItem]] = {index: [] for index in range(len(steps))}
    for item in work:
        if item.step is not None and item.step in by_step:
            by_step[item.step].append(item)
    wait_ends = sorted(wait.end_us for wait in waits)
    windows: list[StepWindow] = []
    previous_end = float("-inf")
    for index, step in enumerate(steps):
        items = by_step[index]
        start = max(step.start_us, previous_end)
        end = max([step.end_us, *(item.end_us for item in items)])
        busy = _union(
            (max(item.start_us, start), min(item.end_us, end))
            for item in items
            if item.end_us > start and item.start_us < end
        )
        windows.append(
            StepWindow(
                step=index,
                start_us=start,
                end_us=end,
                busy_us=sum(right - left for left, right in busy),
                gaps=_gaps(start, end, busy, wait_ends),
            )
        )
        previous_end = end
    return windows


def _union(intervals) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for left, right in sorted(intervals):
        if merged and left <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], right))
        else:
            merged.append((left, right))
    return merged


def _gaps(start, end, busy, wait_ends) -> list[Gap]:
    if not busy:
        return [Gap(kind="before the first kernel", start_us=start, end_us=end)]
    gaps = []
    if busy[0][0] > start:
        gaps.append(Gap(kind="before the first kernel", start_us=start, end_us=busy[0][0]))
    for (_, left), (right, _) in zip(busy, busy[1:], strict=False):
        kind = "after a host wait" if _wait_ended(wait_ends, left, right) else "between kernels"
        gaps.append(Gap(kind=kind, start_us=left, end_us=right))
    if end > busy[-1][1]:
        gaps.append(Gap(kind="after the last kernel", start_us=busy[-1][1], end_us=end))
    return gaps


def _wait_ended(wait_ends: list[float], left: float, right: float) -> bool:
    """Whether a host wait returned as the device went idle at `left`, before `right`."""
    index = bisect.bisect_left(wait_ends, left - WAIT_CLOCK_SLACK_US)
    return index < len(wait_ends) and wait_ends[index] < right
