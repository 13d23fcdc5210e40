"""Labels for the kernels of a replayed CUDA graph, taken from the ranges open when they were
captured.

A replay runs no Python, so no range encloses its kernels: all of them are launched by one
graph launch. While the forward is captured, though, each launch call runs inside its registry
and module ranges. A graph captured on one stream replays its nodes in capture order, so the
n-th replayed kernel is the n-th captured launch. The two sequences are walked together on
what each item is (kernel, memset, copy); an item only one side has stays unlabelled, and the
share of replayed kernel time that got a label says how much was labelled.

Kinds alone cannot tell one kernel from another, so the mapping is checked by name: the step
also runs once eagerly under the profiler (the reference), and when its launches match the
capture's by kind and region, each captured launch takes the name of the kernel its eager
twin ran; the share of labelled replay time whose kernel has that name confirms the mapping.
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
REFERENCE_RANGE = "profile:reference"
UNLABELLED = "replayed, no capture label"


class CapturedLaunch(BaseModel):
    """One launch made while the graph was captured, and the region its ranges name."""

    model_config = ConfigDict(frozen=True)

    kind: ActivityKind
    region: str
    region_kind: RegionKind
    reference_name: str | None = None  # the kernel its twin in the eager reference step ran


class GraphLabelling(BaseModel):
    """How well the replayed kernels were matched to their capture-time launches."""

    model_config = ConfigDict(frozen=True)

    captured_launches: int
    replayed_per_step: float
    aligned_one_to_one: bool
    labelled_share_of_time: float
    name_confirmed_share: float | None = None  # of labelled time; None: no usable reference


def captured_launches(timeline: Timeline) -> list[CapturedLaunch]:
    """The launches made inside the capture range, in order, each with its region, and with
    the kernel name of its eager twin where the reference step launched the same sequence."""
    captured = [launch for launch, _ in _launches_in(timeline, CAPTURE_RANGE)]
    reference = _launches_in(timeline, REFERENCE_RANGE)
    twins = [(launch.kind, launch.region) for launch, _ in reference]
    if not captured or twins != [(launch.kind, launch.region) for launch in captured]:
        return captured
    names = {}
    for activity in timeline.activities:
        names.setdefault(activity.correlation, activity.name)
    return [
        launch.model_copy(update={"reference_name": names.get(correlation)})
        for launch, (_, correlation) in zip(captured, reference, strict=True)
    ]


def _launches_in(timeline: Timeline, range_name: str) -> list[tuple[CapturedLaunch, int]]:
    """The launches made inside the named range, in order: each as a captured launch with
    its region, and the profiler's correlation id of the call."""
    window = next((item for item in timeline.ranges if item.name == range_name), None)
    if window is None:
        return []
    launches = [
        launch
        for launch in outermost_launches(timeline.launches)
        if launch.launches != "graph" and window.start_us <= launch.start_us < window.end_us
    ]
    stacks = enclosing_ranges(timeline.ranges, [(item.thread, item.start_us) for item in launches])
    found = []
    for launch, stack in zip(launches, stacks, strict=True):
        region, kind = region_of([item.name for item in stack])
        captured = CapturedLaunch(kind=launch.launches, region=region, region_kind=kind)
        found.append((captured, launch.correlation))
    return found


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
    one_to_one, confirmed = True, 0.0
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
            if label is not None and label.reference_name == activity.name:
                confirmed += activity.duration_us
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
    named = bool(captured) and all(item.reference_name is not None for item in captured)
    labelling = GraphLabelling(
        captured_launches=len(captured),
        replayed_per_step=len(replays) / len(steps) if steps else 0.0,
        aligned_one_to_one=one_to_one and bool(replays),
        labelled_share_of_time=labelled / total if total else 0.0,
        name_confirmed_share=(confirmed / labelled if labelled else 0.0) if named else None,
    )
    direct = [
        item
        for item, activity in zip(device_work(timeline), timeline.activities, strict=True)
        if activity.correlation not in graph_launches
    ]
    return direct + replays, labelling


def _within(time: float, window: HostRange) -> bool:
    return window.start_us <= time < window.end_us
