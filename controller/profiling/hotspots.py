"""Where a driver's time goes: kernels attributed, through their host launch, to the ranges
that enclosed it (registry operator calls, attention calls, module calls with layer indices
folded), ranked by time per step.

On CUDA the time is each kernel's device time. Without CUDA there are no device kernels, so
the CPU time of each registry call and of each top-level ATen call outside one stands in, and
the report says so.
"""

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict

from operators.ops import label_registry_calls

LAUNCH_BOUND_US = 5.0
RegionKind = Literal["registry", "attention", "module", "outside"]


class Hotspot(BaseModel):
    """One region's share of a step."""

    model_config = ConfigDict(frozen=True)

    region: str
    kind: RegionKind
    time_us_per_step: float
    kernels_per_step: float
    mean_kernel_us: float
    share_under_5us: float


class HotspotReport(BaseModel):
    """Every region ranked by time per step, and what lay outside registry calls."""

    model_config = ConfigDict(frozen=True)

    driver: list[str]
    warmup: int
    steps: int
    device_attribution: bool
    note: str
    total_us_per_step: float
    outside_registry_us_per_step: float
    hotspots: list[Hotspot]


def profile_steps(step: Callable[[], Any], warmup: int, steps: int):
    """Run `step` warmup times, then `steps` times under torch.profiler with ranges labelled."""
    for _ in range(warmup):
        step()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with (
        torch.profiler.profile(activities=activities) as profiler,
        label_registry_calls(),
        label_module_calls(),
    ):
        for _ in range(steps):
            step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    return profiler


@contextmanager
def label_module_calls() -> Iterator[None]:
    """Wrap each module call in a `module:<path>` range, its path from the outermost module
    called and layer indices folded (`layers.3.mlp` reads `layers.*.mlp`)."""
    open_ranges: list = []
    names: dict[int, str] = {}

    def before(module, _inputs):
        if not open_ranges:
            names.clear()
            root = type(module).__name__
            for name, child in module.named_modules():
                path = f"{root}.{name}" if name else root
                names[id(child)] = re.sub(r"\.\d+(?=\.|$)", ".*", path)
        label = names.get(id(module), type(module).__name__)
        labelled = torch.profiler.record_function(f"module:{label}")
        labelled.__enter__()
        open_ranges.append(labelled)

    def after(_module, _inputs, _output):
        if open_ranges:
            open_ranges.pop().__exit__(None, None, None)

    pre = torch.nn.modules.module.register_module_forward_pre_hook(before)
    post = torch.nn.modules.module.register_module_forward_hook(after)
    try:
        yield
    finally:
        pre.remove()
        post.remove()
        while open_ranges:
            open_ranges.pop().__exit__(None, None, None)


def attribute(profiler, driver: list[str], warmup: int, steps: int) -> HotspotReport:
    """Rank regions by time per step from a finished profile."""
    device = torch.cuda.is_available()
    samples: dict[tuple[str, str], list[float]] = {}
    outside_registry = 0.0
    for event in profiler.events():
        for duration in _durations(event, device):
            region, kind, under_registry = _region_of(event)
            samples.setdefault((region, kind), []).append(duration)
            if not under_registry:
                outside_registry += duration
    hotspots = []
    for (region, kind), durations in samples.items():
        hotspots.append(
            Hotspot(
                region=region,
                kind=kind,
                time_us_per_step=sum(durations) / steps,
                kernels_per_step=len(durations) / steps,
                mean_kernel_us=sum(durations) / len(durations),
                share_under_5us=sum(d < LAUNCH_BOUND_US for d in durations) / len(durations),
            )
        )
    hotspots.sort(key=lambda item: (-item.time_us_per_step, item.region))
    note = (
        "device time of each kernel, attributed through its host launch"
        if device
        else "no CUDA here: device attribution needs CUDA; the CPU time of registry calls and "
        "of top-level ATen calls outside them stands in for kernels"
    )
    return HotspotReport(
        driver=driver,
        warmup=warmup,
        steps=steps,
        device_attribution=device,
        note=note,
        total_us_per_step=sum(h.time_us_per_step for h in hotspots),
        outside_registry_us_per_step=outside_registry / steps,
        hotspots=hotspots,
    )


def _durations(event, device: bool) -> list[float]:
    """The kernels this host event launched (CUDA); without CUDA, its own CPU time if it is a
    registry call or a top-level ATen call outside one (an interpreted Triton kernel runs no
    ATen op, so its registry range is the only place its time shows)."""
    if device:
        return [kernel.duration for kernel in getattr(event, "kernels", ())]
    is_registry = event.name.startswith("registry:")
    if not (is_registry or event.name.startswith("aten::")):
        return []
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("registry:") or (
            not is_registry and parent.name.startswith("aten::")
        ):
            return []
        parent = parent.cpu_parent
    return [float(event.cpu_time_total)]


def _region_of(event) -> tuple[str, RegionKind, bool]:
    """The innermost registry range, else attention call, else module range enclosing it."""
    chain, node = [], event
    while node is not None:
        chain.append(node.name)
        node = node.cpu_parent
    registry = next((name for name in chain if name.startswith("registry:")), None)
    if registry:
        return registry, "registry", True
    attention = next((name for name in chain if _is_attention(name)), None)
    if attention:
        return attention, "attention", False
    module = next((name for name in chain if name.startswith("module:")), None)
    if module:
        return module, "module", False
    return "outside any module", "outside", False


def _is_attention(name: str) -> bool:
    """An ATen attention op, or a module call whose own name ends in `attention`."""
    if name.startswith("module:"):
        return name.rsplit(".", 1)[-1].lower().endswith("attention")
    return not name.startswith("registry:") and "attention" in name.lower()
