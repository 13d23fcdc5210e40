"""Device times for an eager profile from a second pass that traced only the device.

Eagerly the host paces the step, and recording every ATen op and range on the host (what
labels the kernels) slows it by half or more, so the labelled pass's gaps describe the
profiler, not the model. A second pass traces only the device: the host runs as it does
unprofiled. An eager step launches the same kernels in the same order every time, so the
second pass's kernels are matched one to one with the labelled pass's, checked by name, and
each keeps its label and takes its time from the second pass. The second pass starts with a
lead-in step (the profiler's own first kernels land there) that the account leaves out, and
each step's window runs from the end of the step before to its own last kernel: the idle time
in between is the host's, as it is when the step is timed unprofiled.
"""

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from controller.profiling.attribution import STEP_RANGE, WorkItem
from controller.profiling.timeline import DeviceActivity, HostRange, Timeline

LEAD_IN_STEPS = 1
LEAD_IN_REGION = "lead-in step"


class Retimed(BaseModel):
    """Labelled work with the device-only pass's times, and one step range per step of it
    (the lead-in first), each from the end of the step before to its last kernel's end."""

    model_config = ConfigDict(frozen=True)

    work: list[WorkItem]
    steps: list[HostRange]


def retime(labelled: Sequence[WorkItem], timing: Timeline, steps: int) -> Retimed | str:
    """The labelled pass's work at the timing pass's times, or why the two cannot be
    matched (then the caller keeps the labelled pass's own times)."""
    per_step: list[list[WorkItem]] = [[] for _ in range(steps)]
    for item in labelled:
        if item.step is not None and 0 <= item.step < steps:
            per_step[item.step].append(item)
    for items in per_step:
        items.sort(key=lambda item: item.start_us)
    expected = sum(len(items) for items in per_step)
    activities = sorted(timing.activities, key=lambda activity: activity.start_us)
    if not expected or len(activities) <= expected:
        return (
            f"the device-only pass ran {len(activities)} kernels where {expected} steps' "
            "worth and a lead-in were expected"
        )
    lead_in, measured = activities[: len(activities) - expected], activities[-expected:]
    work = [WorkItem.of(activity, LEAD_IN_REGION, "outside", 0) for activity in lead_in]
    ranges = [_span(lead_in)]
    offset = 0
    for index, items in enumerate(per_step):
        twins = measured[offset : offset + len(items)]
        offset += len(items)
        for position, (item, activity) in enumerate(zip(items, twins, strict=True)):
            if item.name != activity.name:
                return (
                    f"step {index} kernel {position} is {item.name!r} in the labelled pass "
                    f"and {activity.name!r} in the device-only pass"
                )
            work.append(WorkItem.of(activity, item.region, item.region_kind, index + LEAD_IN_STEPS))
        ranges.append(_span(twins, opens=ranges[-1].end_us))
    return Retimed(work=work, steps=ranges)


def _span(activities: Sequence[DeviceActivity], opens: float | None = None) -> HostRange:
    """A step's range: from `opens` (the step before it ended: the host's time before this
    step's first kernel is the step's too), else from its first kernel, to its last kernel."""
    first = min((activity.start_us for activity in activities), default=0.0)
    start = first if opens is None else opens
    end = max((activity.end_us for activity in activities), default=start)
    return HostRange(name=STEP_RANGE, thread=0, start_us=start, end_us=end)
