"""Argument layouts a tuned kernel was verified on, so `applies()` can refuse anything else.

Strides of size-one and empty dimensions carry no meaning, so they are compared as 0.
"""

from typing import Any

import torch
from pydantic import BaseModel, ConfigDict


class TensorLayout(BaseModel):
    """Shape, meaningful strides, dtype and device type of one tensor argument."""

    model_config = ConfigDict(frozen=True)

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    device_type: str


def layout_of(tensor: torch.Tensor) -> TensorLayout:
    empty = tensor.numel() == 0
    strides = tuple(
        0 if (size <= 1 or empty) else stride
        for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
    )
    return TensorLayout(
        shape=tuple(tensor.shape),
        strides=strides,
        dtype=str(tensor.dtype).removeprefix("torch."),
        device_type=tensor.device.type,
    )


ArgumentSignature = tuple[TensorLayout | float | int | bool | str | None, ...]
PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
"""A model's weights are Parameters: a plain tensor that autograd may track, with no dispatch
of its own. Any other subclass can change what an operation does, so it never matches."""


def signature_of(args: tuple[Any, ...]) -> ArgumentSignature:
    """Tensors by layout, plain constants by value; anything else never matches."""
    signature = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            if type(arg) not in PLAIN_TENSOR_TYPES:
                return (object(),)
            signature.append(layout_of(arg))
        elif arg is None or isinstance(arg, bool | int | float | str):
            signature.append(arg)
        else:
            return (object(),)
    return tuple(signature)


class VerifiedLayouts:
    """The set of argument signatures the evaluator verified; `applies` is membership."""

    def __init__(self, signatures: list[ArgumentSignature]) -> None:
        self._signatures = set(signatures)

    def applies(self, *args: Any, **kwargs: Any) -> bool:
        ordered = args + tuple(kwargs[key] for key in sorted(kwargs))
        return signature_of(ordered) in self._signatures
