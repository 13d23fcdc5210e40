"""What torch.profiler saw, as plain records on one clock: host ranges (ATen ops, registry,
module and step ranges), host launches and waits, device activities. Read once from the
profiler, so attribution, the step account and graph labelling are pure functions of them."""

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict
from torch.autograd import DeviceType

ActivityKind = Literal["kernel", "memset", "memcpy"]
LaunchKind = Literal["kernel", "memset", "memcpy", "graph"]

HOST_RANGE_TYPES = frozenset({"cpu_op", "user_annotation"})
HOST_CALL_TYPES = frozenset({"cuda_runtime", "cuda_driver"})
DEVICE_ACTIVITY_KINDS: dict[str, ActivityKind] = {
    "kernel": "kernel",
    "gpu_memset": "memset",
    "gpu_memcpy": "memcpy",
}
_LAUNCH_KINDS: tuple[tuple[re.Pattern, LaunchKind], ...] = (
    (re.compile(r"GraphLaunch"), "graph"),
    (re.compile(r"Launch(Cooperative)?Kernel"), "kernel"),
    (re.compile(r"Memset"), "memset"),
    (re.compile(r"Memcpy"), "memcpy"),
)
# Calls after which the host had waited for the device (a copy to the host is one).
_WAIT = re.compile(r"Synchronize|^cudaMemcpy$|^cuMemcpyDtoH")


class HostRange(BaseModel):
    """A span on one host thread: an ATen op or a labelled range (`registry:`, `module:`)."""

    model_config = ConfigDict(frozen=True)

    name: str
    thread: int
    start_us: float
    end_us: float


class HostLaunch(BaseModel):
    """A runtime or driver call that put work on the device; `correlation` is the id the
    profiler gives the call and every device activity it launched."""

    model_config = ConfigDict(frozen=True)

    name: str
    launches: LaunchKind
    thread: int
    start_us: float
    end_us: float
    correlation: int


class HostWait(BaseModel):
    """A call in which the host waited for the device (a synchronize, a copy to the host)."""

    model_config = ConfigDict(frozen=True)

    name: str
    thread: int
    start_us: float
    end_us: float


class DeviceActivity(BaseModel):
    """A kernel, memset or copy as it ran on the device."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: ActivityKind
    start_us: float
    end_us: float
    correlation: int

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us


class Timeline(BaseModel):
    """Every record of one profiler session, times in us from its first event."""

    model_config = ConfigDict(frozen=True)

    ranges: list[HostRange] = []
    launches: list[HostLaunch] = []
    waits: list[HostWait] = []
    activities: list[DeviceActivity] = []


def launch_kind(name: str) -> LaunchKind | None:
    """What a runtime or driver call launches, from its name; None for other calls."""
    for pattern, kind in _LAUNCH_KINDS:
        if pattern.search(name):
            return kind
    return None


_RUNTIME_CALL = re.compile(r"^(cuda|cu)[A-Z]")


def activity_type(event) -> str:
    """Kineto's activity type of an event (`kernel`, `cpu_op`, `cuda_runtime`, ...). Torch
    releases whose events do not expose it (2.11) are read from the device type, the
    annotation flag and the name: device events by what they move (a range annotated on the
    device is no activity), host calls by the CUDA runtime and driver naming
    (`cudaLaunchKernel`, `cuLaunchKernel`)."""
    if hasattr(event, "activity_type"):
        return event.activity_type()
    if event.device_type() != DeviceType.CPU:
        if event.is_user_annotation():  # a host range drawn on the device's timeline
            return "gpu_user_annotation"
        name = event.name()
        return "gpu_memcpy" if "Memcpy" in name else "gpu_memset" if "Memset" in name else "kernel"
    if event.is_user_annotation():
        return "user_annotation"
    return "cuda_runtime" if _RUNTIME_CALL.search(event.name()) else "cpu_op"


def timeline_from_profiler(profiler) -> Timeline:
    """The records of a finished `torch.profiler.profile` session."""
    events = profiler.profiler.kineto_results.events()
    origin = min((event.start_ns() for event in events), default=0)
    ranges, launches, waits, activities = [], [], [], []
    for event in events:
        name, kind = event.name(), activity_type(event)
        start = (event.start_ns() - origin) / 1e3
        end = start + event.duration_ns() / 1e3
        if kind in DEVICE_ACTIVITY_KINDS:
            activities.append(
                DeviceActivity(
                    name=name,
                    kind=DEVICE_ACTIVITY_KINDS[kind],
                    start_us=start,
                    end_us=end,
                    correlation=event.correlation_id(),
                )
            )
            continue
        thread = event.start_thread_id()
        if kind in HOST_RANGE_TYPES and not event.is_async():
            ranges.append(HostRange(name=name, thread=thread, start_us=start, end_us=end))
            continue
        if kind not in HOST_CALL_TYPES:
            continue
        launched = launch_kind(name)
        if launched is not None:
            launches.append(
                HostLaunch(
                    name=name,
                    launches=launched,
                    thread=thread,
                    start_us=start,
                    end_us=end,
                    correlation=event.correlation_id(),
                )
            )
        if _WAIT.search(name):
            waits.append(HostWait(name=name, thread=thread, start_us=start, end_us=end))
    return Timeline(ranges=ranges, launches=launches, waits=waits, activities=activities)
