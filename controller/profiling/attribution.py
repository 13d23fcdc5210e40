"""Each piece of device work, counted for the region whose host range enclosed its launch.

On CUDA a kernel is joined to the runtime or driver call that launched it by the profiler's
correlation id, and the call's place on its host thread gives the ranges it ran inside: the
innermost registry range wins over any module range around it. Without CUDA there are no
kernels: each registry call, and each top-level ATen call outside one, is a piece of host work
in its own right (an interpreted Triton kernel runs no ATen op, so its registry range is the
only place its time shows).
"""

import bisect
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from controller.profiling.enclosing import enclosing_ranges
from controller.profiling.timeline import DeviceActivity, HostLaunch, HostRange, Timeline

RegionKind = Literal["registry", "attention", "module", "outside"]
STEP_RANGE = "profile:step"
REGISTRY_PREFIX = "registry:"
MODULE_PREFIX = "module:"
OUTSIDE_ANY_MODULE = "outside any module"
NO_HOST_LAUNCH = "launch not seen"


class WorkItem(BaseModel):
    """A kernel, memset or copy (on a CPU: a registry call or a top-level ATen call), the
    region it counts for and the profiled step it belongs to (None: outside every step)."""

    model_config = ConfigDict(frozen=True)

    name: str
    region: str
    region_kind: RegionKind
    start_us: float
    end_us: float
    step: int | None

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us

    @classmethod
    def of(
        cls, activity: DeviceActivity, region: str, kind: RegionKind, step: int | None
    ) -> "WorkItem":
        """A device activity as it ran, counted for `region` in `step`."""
        return cls(
            name=activity.name,
            region=region,
            region_kind=kind,
            start_us=activity.start_us,
            end_us=activity.end_us,
            step=step,
        )


def region_of(stack: Sequence[str]) -> tuple[str, RegionKind]:
    """The innermost registry range of `stack` (outermost first), else its innermost
    attention call, else its innermost module range."""
    for prefix, kind in (
        (REGISTRY_PREFIX, "registry"),
        (None, "attention"),
        (MODULE_PREFIX, "module"),
    ):
        for name in reversed(stack):
            if name.startswith(prefix) if prefix else _is_attention(name):
                return name, kind
    return OUTSIDE_ANY_MODULE, "outside"


def step_ranges(timeline: Timeline) -> list[HostRange]:
    """The profiled steps in the order they ran."""
    steps = [item for item in timeline.ranges if item.name == STEP_RANGE]
    return sorted(steps, key=lambda item: item.start_us)


def device_work(timeline: Timeline) -> list[WorkItem]:
    """Every device activity, attributed through the launch that shares its correlation id."""
    launches = {launch.correlation: launch for launch in timeline.launches}
    matched = [launches.get(activity.correlation) for activity in timeline.activities]
    points = [(launch.thread, launch.start_us) for launch in matched if launch is not None]
    stacks = iter(enclosing_ranges(timeline.ranges, points))
    ordered = step_ranges(timeline)
    steps = {id(item): index for index, item in enumerate(ordered)}
    step_starts = [item.start_us for item in ordered]
    work = []
    for activity, launch in zip(timeline.activities, matched, strict=True):
        if launch is None:  # counted for the step it ran in, so its time is not lost
            latest = bisect.bisect_right(step_starts, activity.start_us) - 1
            region, kind, step = NO_HOST_LAUNCH, "outside", latest if latest >= 0 else None
        else:
            stack = next(stacks)
            region, kind = region_of([item.name for item in stack])
            step = next((steps[id(item)] for item in stack if id(item) in steps), None)
        work.append(WorkItem.of(activity, region, kind, step))
    return work


def host_work(timeline: Timeline) -> list[WorkItem]:
    """Without a device: each outermost registry call and each top-level ATen call outside
    one, attributed by the ranges enclosing its start (itself included)."""
    points = [(item.thread, item.start_us) for item in timeline.ranges]
    stacks = enclosing_ranges(timeline.ranges, points)
    steps = {id(item): index for index, item in enumerate(step_ranges(timeline))}
    work = []
    for item, stack in zip(timeline.ranges, stacks, strict=True):
        outer = [other.name for other in stack if other is not item]
        if item.name.startswith(REGISTRY_PREFIX):
            if any(name.startswith(REGISTRY_PREFIX) for name in outer):
                continue
        elif not item.name.startswith("aten::") or any(
            name.startswith((REGISTRY_PREFIX, "aten::")) for name in outer
        ):
            continue
        region, kind = region_of([other.name for other in stack])
        step = next((steps[id(other)] for other in stack if id(other) in steps), None)
        work.append(
            WorkItem(
                name=item.name,
                region=region,
                region_kind=kind,
                start_us=item.start_us,
                end_us=item.end_us,
                step=step,
            )
        )
    return work


def outermost_launches(launches: Sequence[HostLaunch]) -> list[HostLaunch]:
    """Launches in the order made, without a call made inside another (a runtime call's own
    driver call), so one launch stands for one piece of device work."""
    kept: list[HostLaunch] = []
    last_on_thread: dict[int, HostLaunch] = {}
    for launch in sorted(launches, key=lambda item: (item.start_us, -item.end_us)):
        outer = last_on_thread.get(launch.thread)
        if outer is not None and launch.end_us <= outer.end_us:
            continue
        last_on_thread[launch.thread] = launch
        kept.append(launch)
    return kept


def _is_attention(name: str) -> bool:
    """An ATen attention op, or a module call whose own name ends in `attention`."""
    if name.startswith(MODULE_PREFIX):
        return name.rsplit(".", 1)[-1].lower().endswith("attention")
    return name.startswith("aten::") and "attention" in name.lower()
