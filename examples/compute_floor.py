"""The least time a forward's arithmetic can take on a device: the floating-point operations of
the references' matrix products and attention, at the rate the device reaches on one large BF16
product. Past a few hundred rows per call a forward is bound by its products, not by its
weights' bytes, so the byte floor alone would promise what no kernel set can reach."""

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch.utils.flop_counter import FlopCounterMode

from examples.byte_floor import median_device_seconds
from examples.config import ExampleSize
from examples.model import build_model, make_inputs
from operators import use_kernel_profile

RATE_SIDE = 8192
"""One square BF16 product of this side (1.1 TFLOP) measures the device's product rate."""
RATE_REPEATS = 10


class ComputeFloor(BaseModel):
    """The operations one forward needs, the product rate they run at and the time that takes."""

    model_config = ConfigDict(frozen=True)

    flops: int = Field(description="the references' products and attention, one forward")
    rate_tflop_per_s: float = Field(description="one large BF16 product, measured")
    milliseconds: float


def forward_flops(size: ExampleSize, batch: int) -> int:
    """Floating-point operations of one forward of the references (matrix products and
    attention, as torch's flop counter counts them), counted on the meta device: shapes only,
    nothing computed or allocated."""
    meta = torch.device("meta")
    model = build_model(size, 0, meta)
    inputs = make_inputs(size, batch, 0, meta)
    with use_kernel_profile("torch"), FlopCounterMode(display=False) as counter:
        model(inputs)
    return counter.get_total_flops()


def product_rate(device: torch.device) -> float:
    """Floating-point operations per second of a large square BF16 product, median of a few."""
    left = torch.randn(RATE_SIDE, RATE_SIDE, dtype=torch.bfloat16, device=device)
    right = torch.randn(RATE_SIDE, RATE_SIDE, dtype=torch.bfloat16, device=device)
    out = torch.matmul(left, right)
    seconds = median_device_seconds(lambda: torch.matmul(left, right, out=out), RATE_REPEATS)
    return 2 * RATE_SIDE**3 / seconds


def compute_floor(size: ExampleSize, batch: int, device: torch.device) -> ComputeFloor | None:
    """The floor on a CUDA device; None elsewhere (a CPU's product rate says nothing useful)."""
    if device.type != "cuda":
        return None
    flops = forward_flops(size, batch)
    rate = product_rate(device)
    return ComputeFloor(
        flops=flops,
        rate_tflop_per_s=round(rate / 1e12, 1),
        milliseconds=round(flops / rate * 1e3, 3),
    )
