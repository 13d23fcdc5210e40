"""How fast each planned operator could possibly be on this GPU: its floor per model step.

For every captured layout, the bytes its call must move (each stored element of its inputs and
outputs once) and the multiply-adds its reference performs (counted by running it on meta
tensors under torch's FLOP counter, so nothing is computed) give two lower bounds: the bytes at
the device's measured copy bandwidth and the FLOPs at its dense BF16 tensor-core rate. The
larger one, times the calls per step, is the operator's floor; the plan shows its time beside
it, so what remains (time far above floor) reads off the table.
"""

from __future__ import annotations

import math

import torch
from pydantic import BaseModel, ConfigDict, Field

from operators.call_capture import Capture, CapturedLayout, concrete_strides
from operators.layouts import TensorLayout
from operators.registry import REGISTRY

DENSE_BF16_TFLOPS = {"H200": 989.4, "H100 SXM": 989.4, "H100 80GB HBM3": 989.4, "H100": 756.0}
"""Dense BF16 tensor-core peaks from the vendor's data sheets, by device-name fragment (the
longest matching fragment wins; an H100 of unknown form is read as the PCIe part)."""


class DeviceRates(BaseModel):
    """What bounds a kernel on this device: copy bandwidth and tensor-core rate."""

    model_config = ConfigDict(frozen=True)

    name: str
    bandwidth_bytes_per_us: float
    tensor_flops_per_us: float | None = Field(None, description="None: no known peak")


class OperatorFloor(BaseModel):
    """One operator's lower bound per model step and what sets it."""

    model_config = ConfigDict(frozen=True)

    bytes_per_step: float
    flops_per_step: float | None = Field(None, description="None: the reference could not run")
    floor_us: float
    bound: str = Field(description="`bytes` or `tensor cores`")


def tensor_peak(device_name: str) -> float | None:
    """The dense BF16 rate in FLOPs per microsecond for a device name, or None."""
    matches = [fragment for fragment in DENSE_BF16_TFLOPS if fragment in device_name]
    if not matches:
        return None
    return DENSE_BF16_TFLOPS[max(matches, key=len)] * 1e6


def operator_floors(capture: Capture, rates: DeviceRates) -> dict[str, OperatorFloor]:
    """Every captured operator's floor per step on a device with these rates."""
    steps = max(capture.steps, 1)
    moved: dict[str, float] = {}
    counted: dict[str, float | None] = {}
    for layout in capture.layouts:
        per_step = layout.count / steps
        name = layout.operator
        moved[name] = moved.get(name, 0.0) + per_step * layout_bytes(layout)
        flops = reference_flops(layout)
        known = counted.get(name, 0.0)
        counted[name] = None if flops is None or known is None else known + per_step * flops
    floors = {}
    for operator in moved:
        flops = counted[operator]
        bytes_us = moved[operator] / rates.bandwidth_bytes_per_us
        flops_us = flops / rates.tensor_flops_per_us if flops and rates.tensor_flops_per_us else 0.0
        floors[operator] = OperatorFloor(
            bytes_per_step=moved[operator],
            flops_per_step=flops,
            floor_us=max(bytes_us, flops_us),
            bound="tensor cores" if flops_us > bytes_us else "bytes",
        )
    return floors


def layout_bytes(layout: CapturedLayout) -> int:
    """Bytes of every stored element of the call's inputs and outputs, each once."""
    return sum(_stored_bytes(tensor) for tensor in [*layout.inputs.values(), *layout.outputs])


def reference_flops(layout: CapturedLayout) -> float | None:
    """The FLOPs of the operator's reference on this layout, counted on meta tensors."""
    from torch.utils.flop_counter import FlopCounterMode

    declaration = REGISTRY.declaration(layout.operator)
    tensors = {name: _meta(tensor) for name, tensor in layout.inputs.items()}
    scalars = {name: value for name, value in layout.scalars.items() if value is not None}
    try:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            declaration.reference(**tensors, **scalars)
    except Exception:  # a reference that needs values (an .item(), a data-dependent shape)
        return None
    return float(counter.get_total_flops())


def _stored_bytes(tensor: TensorLayout) -> int:
    """Broadcast (stride-0) dimensions hold one element; size-one ones are recorded as 0 too."""
    elements = math.prod(
        size for size, stride in zip(tensor.shape, tensor.strides, strict=True) if stride
    )
    return elements * getattr(torch, tensor.dtype).itemsize


def _meta(tensor: TensorLayout) -> torch.Tensor:
    dtype = getattr(torch, tensor.dtype)
    return torch.empty_strided(tensor.shape, concrete_strides(tensor), dtype=dtype, device="meta")
