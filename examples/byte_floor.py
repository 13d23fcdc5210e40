"""The least time a forward can take on a device: every weight read once per use, at the
device's measured copy bandwidth. A speedup is only as good as the gap it leaves to this."""

from collections.abc import Callable

import torch
from pydantic import BaseModel, ConfigDict, Field

from examples.model import ExampleModel

COPY_BYTES = 1 << 30
COPY_REPEATS = 10


class ByteFloor(BaseModel):
    """The weights one forward reads, the bandwidth they are read at and the time that takes."""

    model_config = ConfigDict(frozen=True)

    weight_bytes: int = Field(
        description="vision, prefix and modulation weights once, the rest of the expert's per step"
    )
    bandwidth_gb_per_s: float = Field(description="a large device-to-device copy, read + write")
    milliseconds: float


def weight_bytes_per_forward(model: ExampleModel) -> int:
    """Bytes of weights one forward reads: the action expert's once per denoise step, except
    its modulations', which every step's conditioning reads once before the steps; the rest
    once. The token embedding counts only the rows a prompt can gather, so it is left out."""

    def size(module: torch.nn.Module) -> int:
        return sum(p.numel() * p.element_size() for p in module.parameters())

    embedding = model.prefix_encoder.token_embedding
    modulations = sum(
        size(layer.attention_modulation) + size(layer.mlp_modulation)
        for layer in model.action_expert.layers
    )
    once = size(model.vision) + size(model.prefix_encoder) - embedding.numel() * 2 + modulations
    return once + (size(model.action_expert) - modulations) * model.size.denoise_steps


def copy_bandwidth(device: torch.device) -> float:
    """Bytes per second a large device-to-device copy moves (read plus write), median of a few."""
    source = torch.empty(COPY_BYTES, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    target.copy_(source)
    return 2 * COPY_BYTES / median_device_seconds(lambda: target.copy_(source), COPY_REPEATS)


def median_device_seconds(work: Callable[[], object], repeats: int) -> float:
    """The median of `repeats` runs of `work`, each timed alone by CUDA events (a device rate's
    denominator: the byte floor's copy, the compute floor's product)."""
    spans = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        spans.append(start.elapsed_time(end) / 1e3)
    spans.sort()
    return spans[len(spans) // 2]


def byte_floor(model: ExampleModel, device: torch.device) -> ByteFloor | None:
    """The floor on a CUDA device; None elsewhere (a CPU's copy rate says nothing useful)."""
    if device.type != "cuda":
        return None
    weight_bytes = weight_bytes_per_forward(model)
    bandwidth = copy_bandwidth(device)
    return ByteFloor(
        weight_bytes=weight_bytes,
        bandwidth_gb_per_s=round(bandwidth / 1e9, 1),
        milliseconds=round(weight_bytes / bandwidth * 1e3, 3),
    )
