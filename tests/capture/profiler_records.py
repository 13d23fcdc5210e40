"""Synthetic profiler records for the profile's tests: host ranges, launches and device
activities laid out as torch.profiler reports them on CUDA."""

from controller.profiling.timeline import (
    DeviceActivity,
    HostLaunch,
    HostRange,
    Timeline,
    launch_kind,
)

THREAD = 1


def span(name: str, start: float, end: float, thread: int = THREAD) -> HostRange:
    return HostRange(name=name, thread=thread, start_us=start, end_us=end)


def launch(name: str, start: float, correlation: int, thread: int = THREAD) -> HostLaunch:
    return HostLaunch(
        name=name,
        launches=launch_kind(name),
        thread=thread,
        start_us=start,
        end_us=start + 1,
        correlation=correlation,
    )


def kernel(name: str, start: float, end: float, correlation: int, kind="kernel"):
    return DeviceActivity(name=name, kind=kind, start_us=start, end_us=end, correlation=correlation)


def graph_timeline(
    extra_kernel: bool = False,
    direct_kernel: bool = False,
    reference: tuple[str, ...] = (),
    step_starts: tuple[float, float] = (200, 300),
    replay_starts: tuple[float, float] = (220, 320),
) -> Timeline:
    """A capture of three launches (two registry calls in a module, one in the module alone),
    then two profiled replays (host step ranges from `step_starts`, each 10 us, the replays'
    kernels from `replay_starts`); the second replay may run a kernel the capture never saw,
    the first step may launch a kernel of its own before its replay, and an eager reference
    step before the capture may run kernels of the given names."""
    ranges, launches, activities = [], [], []
    for offset, window in ((0, "profile:capture"), (-200, "profile:reference")):
        if window == "profile:reference" and not reference:
            continue
        ranges += [
            span(window, offset, offset + 100),
            span("module:Model.mlp", offset + 5, offset + 95),
            span("registry:gated_gelu", offset + 10, offset + 30),
            span("registry:rms_norm", offset + 40, offset + 60),
            span("aten::mm", offset + 70, offset + 90),
        ]
        first = 1 if window == "profile:capture" else 11
        launches += [
            launch("cuLaunchKernel", offset + 20, first),
            launch("cuLaunchKernel", offset + 50, first + 1),
            launch("cudaLaunchKernel", offset + 80, first + 2),
        ]
    for index, name in enumerate(reference):
        activities.append(kernel(name, -170 + 30 * index, -165 + 30 * index, 11 + index))
    ranges += [span("profile:step", start, start + 10) for start in step_starts]
    launches += [
        launch("cudaGraphLaunch", start + 1, correlation)
        for correlation, start in zip((4, 5), step_starts, strict=True)
    ]
    for correlation, start in zip((4, 5), replay_starts, strict=True):
        activities += [
            kernel("gelu", start, start + 10, correlation),
            kernel("norm", start + 11, start + 15, correlation),
            kernel("gemm", start + 16, start + 36, correlation),
        ]
    if extra_kernel:
        activities.append(kernel("unknown", 360, 366, 5))
    if direct_kernel:
        launches.append(launch("cudaLaunchKernel", 200.5, 6))
        activities.append(kernel("offset_fill", 205, 206, 6))
    return Timeline(ranges=ranges, launches=launches, activities=activities)
