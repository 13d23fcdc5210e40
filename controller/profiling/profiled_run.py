"""Running a driver under torch.profiler, eagerly or as one replayed CUDA graph, and timing
the same forward in the same mode without the profiler, so the profile's account of a step can
be held against the time a user would measure."""

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict

from controller.errors import ControllerError
from controller.profiling.attribution import STEP_RANGE
from controller.profiling.graph_labels import CAPTURE_RANGE, REFERENCE_RANGE
from controller.profiling.module_ranges import label_module_calls
from controller.profiling.timeline import Timeline, timeline_from_profiler
from operators.ops import label_registry_calls

ProfileMode = Literal["eager", "graph"]
GRAPH_WARMUP_STEPS = 2  # compiles the kernels and binds their launchers before the capture
QUEUE_WAIT_CYCLES_PER_STEP = 100_000_000
"""The device-side wait queued before a graph's profiled replays, per replay (about 50 ms at
2 GHz): under the profiler the host's next graph launch comes late (the device idled about
1.6 ms between pi05's replays at batch 1), and a device left waiting for it would show gaps no
unprofiled replay has."""


class WallTime(BaseModel):
    """The step's time on the clock a user would read: CUDA events around it on a GPU, the
    host clock on a CPU; medians, in us."""

    model_config = ConfigDict(frozen=True)

    clock: str
    unprofiled_median_us: float
    unprofiled_samples: int
    profiled_median_us: float


class ProfiledRun(BaseModel):
    """One profiler session of a driver and the wall time of the same step in the same mode."""

    model_config = ConfigDict(frozen=True)

    mode: ProfileMode
    device: str
    warmup: int
    steps: int
    timeline: Timeline
    wall: WallTime
    lead_in: int = 0
    """Profiled steps before `steps` that only fill the device's queue (each in a step range,
    left out of the account): a replayed graph's first step starts behind a device-side wait."""
    timing: Timeline | None = None
    """Eager on CUDA: a second pass of a lead-in step and `steps` steps with only the device
    traced, whose kernels give the labelled pass's their times (see `eager_timing`)."""


def profile_driver(
    step: Callable[[], Any], mode: ProfileMode, warmup: int, steps: int, timed_steps: int
) -> ProfiledRun:
    """Warm up, profile `steps` steps (each in a `profile:step` range) and time `timed_steps`
    without the profiler (eagerly before profiling, a graph's replays after). In graph mode
    the step is captured once (inside a `profile:capture` range, under the profiler) and each
    profiled step is one replay. Eagerly on CUDA a second pass traces only the device, for the
    times (`eager_timing`)."""
    cuda = torch.cuda.is_available()
    if mode == "graph" and not cuda:
        raise ControllerError("--graph needs a CUDA device; profile eagerly (without --graph)")
    clock = StepClock(cuda)
    unprofiled = StepClock(cuda)
    lead_in, timing = 0, None
    if mode == "graph":
        warmup = max(warmup, GRAPH_WARMUP_STEPS)
        replay, profiler = _graph_session(step, warmup, steps, clock)
        lead_in = GRAPH_LEAD_IN_STEPS
        for _ in range(timed_steps):
            unprofiled.around(replay)
    else:
        for _ in range(warmup):
            step()
        # Timed before any profiler session: once the device has been traced, the tracer stays
        # attached to the process and every later launch pays for it.
        for _ in range(timed_steps):
            unprofiled.around(step)
        _synchronize(cuda)
        with _labelled_profiler(cuda) as profiler:
            if cuda:
                step()  # the profiler's first kernels (its own setup) land outside the steps
            for _ in range(steps):
                clock.around(_in_step_range(step))
            _synchronize(cuda)
        if cuda:
            clock = StepClock(cuda)
            timing = _device_only_pass(step, steps, clock)
    profiled = clock.median_us()
    wall = WallTime(
        clock="CUDA events" if cuda else "host clock",
        unprofiled_median_us=unprofiled.median_us(),
        unprofiled_samples=timed_steps,
        profiled_median_us=profiled,
    )
    return ProfiledRun(
        mode=mode,
        device="cuda" if cuda else "cpu",
        warmup=warmup,
        steps=steps,
        timeline=timeline_from_profiler(profiler),
        wall=wall,
        lead_in=lead_in,
        timing=timing,
    )


class StepClock:
    """Times calls as a user would: CUDA events around each (read after one synchronize at
    the end), or the host clock without CUDA."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.samples: list = []

    def around(self, run: Callable[[], Any]) -> None:
        if not self.cuda:
            started = time.perf_counter()
            run()
            self.samples.append((time.perf_counter() - started) * 1e6)
            return
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        self.samples.append((start, end))

    def median_us(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
            return statistics.median(start.elapsed_time(end) * 1e3 for start, end in self.samples)
        return statistics.median(self.samples)


def _device_only_pass(step, steps: int, clock: StepClock) -> Timeline:
    """A lead-in step, then `steps` timed steps, with only the device traced: no host ranges
    or ATen ops recorded, so the host runs the steps as fast as it does unprofiled."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profiler:
        step()
        for _ in range(steps):
            clock.around(step)
        torch.cuda.synchronize()
    return timeline_from_profiler(profiler)


GRAPH_LEAD_IN_STEPS = 1


def _graph_session(step, warmup: int, steps: int, clock: StepClock):
    """Warm up on a side stream, then under one profiler session: run the step once eagerly
    (the reference), capture it into a CUDA graph, replay it once (its upload), then queue a
    device-side wait and behind it the lead-in replay and one replay per profiled step, so the
    replays run back to back as they do unprofiled, whatever the profiler costs the host."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with _labelled_profiler(cuda=True) as profiler:
        with torch.profiler.record_function(REFERENCE_RANGE):
            step()  # eagerly: its kernels' names check the replay's labels
        torch.cuda.synchronize()
        with torch.cuda.graph(graph), torch.profiler.record_function(CAPTURE_RANGE):
            step()
        graph.replay()
        torch.cuda.synchronize()
        torch.cuda._sleep(QUEUE_WAIT_CYCLES_PER_STEP * (GRAPH_LEAD_IN_STEPS + steps))
        for _ in range(GRAPH_LEAD_IN_STEPS):
            _in_step_range(graph.replay)()
        for _ in range(steps):
            clock.around(_in_step_range(graph.replay))
        torch.cuda.synchronize()
    return graph.replay, profiler


@contextmanager
def _labelled_profiler(cuda: bool) -> Iterator[torch.profiler.profile]:
    """torch.profiler with registry calls and module calls in ranges of their own."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with (
        torch.profiler.profile(activities=activities) as profiler,
        label_registry_calls(),
        label_module_calls(),
    ):
        yield profiler


def _in_step_range(run: Callable[[], Any]) -> Callable[[], None]:
    def step() -> None:
        with torch.profiler.record_function(STEP_RANGE):
            run()

    return step


def _synchronize(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()
