"""Labels for the kernels of a replayed CUDA graph, taken from the ranges open when they were
captured.

A replay runs no Python, so no range encloses its kernels: all of them are launched by one
graph launch. While the forward is captured, though, each launch call runs inside its registry
and module ranges. A graph captured on one stream replays its nodes in capture order, so the
n-th replayed kernel is the n-th captured launch. The two sequences are walked together on
what each item is (kernel, memset, copy); an item only one side has stays unlabelled, and the
share of replayed kernel time that got a label says how much was labelled.
"""

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from controller.profiling.attribution import (
    RegionKind,
    WorkItem,
    device_work,
    outermost_launches,
    region_of,
    step_ranges,
)
from controller.profiling.enclosing import enclosing_ranges
from controller.profiling.timeline import ActivityKind, DeviceActivity, HostRange, Timeline

CAPTURE_RANGE = "profile:capture"
UNLABELLED = "replayed, no capture label"


class CapturedLaunch(BaseModel):
    """One launch made while the graph was captured, and the region its ranges name."""

    model_config = ConfigDict(frozen=True)

    kind: ActivityKind
    region: str
    region_kind: RegionKind


class GraphLabelling(BaseModel):
    """How well the replayed kernels were matched to their capture-time launches."""

    model_config = ConfigDict(frozen=True)

    captured_launches: int
    replayed_per_step: float
    aligned_one_to_one: bool
    labelled_share_of_time: float


def captured_launches(timeline: Timeline) -> list[CapturedLaunch]:
    """The launches made inside the capture range, in order, each with its region."""
    capture = _capture_range(timeline)
    if capture is None:
        return []
    launches = [
        launch
        for launch in outermost_launches(timeline.launches)
        if launch.launches != "graph" and capture.start_us <= launch.start_us < capture.end_us
    ]
    stacks = enclosing_ranges(timeline.ranges, [(item.thread, item.start_us) for item in launches])
    captured = []
    for launch, stack in zip(launches, stacks, strict=True):
        region, kind = region_of([item.name for item in stack])
        captured.append(CapturedLaunch(kind=launch.launches, region=region, region_kind=kind))
    return captured


def label_replay(
    captured: Sequence[CapturedLaunch], replayed: Sequence[DeviceActivity]
) -> list[CapturedLaunch | None]:
    """For each replayed activity (in the order it ran), the captured launch it replays, or
    None. The two are walked in step; where their kinds differ, the captured launch is
    skipped when the next one matches (the replay lacks it), else the replayed activity is
    (the capture lacks it)."""
    labels: list[CapturedLaunch | None] = [None] * len(replayed)
    position = 0
    for index, activity in enumerate(replayed):
        if position < len(captured) and captured[position].kind != activity.kind:
            following = captured[position + 1] if position + 1 < len(captured) else None
            if following is not None and following.kind == activity.kind:
                position += 1
        if position < len(captured) and captured[position].kind == activity.kind:
            labels[index] = captured[position]
            position += 1
    return labels


def replayed_work(timeline: Timeline) -> tuple[list[WorkItem], GraphLabelling]:
    """The device activities of each step's graph replay, labelled by capture-time ranges,
    and any work a step launched directly (outside the graph), attributed by its launch."""
    captured = captured_launches(timeline)
    steps = step_ranges(timeline)
    graph_launches = {item.correlation for item in timeline.launches if item.launches == "graph"}
    by_correlation = {activity.correlation: [] for activity in timeline.activities}
    for activity in timeline.activities:
        by_correlation[activity.correlation].append(activity)
    replays: list[WorkItem] = []
    one_to_one = True
    for index, step in enumerate(steps):
        replayed = sorted(
            (
                activity
                for launch in timeline.launches
                if launch.launches == "graph" and _within(launch.start_us, step)
                for activity in by_correlation.get(launch.correlation, ())
            ),
            key=lambda activity: activity.start_us,
        )
        labels = label_replay(captured, replayed)
        one_to_one &= [item.kind for item in captured] == [item.kind for item in replayed]
        for activity, label in zip(replayed, labels, strict=True):
            replays.append(
                WorkItem(
                    name=activity.name,
                    region=label.region if label else UNLABELLED,
                    region_kind=label.region_kind if label else "outside",
                    start_us=activity.start_us,
                    end_us=activity.end_us,
                    step=index,
                )
            )
    total = sum(item.duration_us for item in replays)
    labelled = sum(item.duration_us for item in replays if item.region != UNLABELLED)
    labelling = GraphLabelling(
        captured_launches=len(captured),
        replayed_per_step=len(replays) / len(steps) if steps else 0.0,
        aligned_one_to_one=one_to_one and bool(replays),
        labelled_share_of_time=labelled / total if total else 0.0,
    )
    direct = [
        item
        for item, activity in zip(device_work(timeline), timeline.activities, strict=True)
        if activity.correlation not in graph_launches
    ]
    return direct + replays, labelling


def _capture_range(timeline: Timeline) -> HostRange | None:
    return next((item for item in timeline.ranges if item.name == CAPTURE_RANGE), None)


def _within(time: float, window: HostRange) -> bool:
    return window.start_us <= time < window.end_us
