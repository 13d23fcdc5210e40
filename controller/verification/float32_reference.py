"""The model's FP32 reference: the same forward with every BF16 tensor made in FP32 instead.

The example model (like most BF16 models) names its dtype where it creates or casts tensors,
so `.float()` on the module alone is not enough. `Float32Everywhere` is a dispatch mode that
rewrites a requested `bfloat16` (or `float16`) into `float32` for every ATen call in its
scope, so casts, fresh buffers and factory calls all stay FP32 while the code runs unchanged.
"""

import copy

import torch
from torch.utils._python_dispatch import TorchDispatchMode

LOW_PRECISION = (torch.bfloat16, torch.float16)


class Float32Everywhere(TorchDispatchMode):
    """Every ATen call's `dtype` of BF16/FP16 becomes FP32; low-precision inputs of ops that
    write into none of their arguments are upcast (tensors made outside the scope)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if kwargs.get("dtype") in LOW_PRECISION:
            kwargs["dtype"] = torch.float32
        if not func._schema.is_mutable:  # an in-place op must keep writing into its own tensor
            args = torch.utils._pytree.tree_map(_upcast, args)
            kwargs = torch.utils._pytree.tree_map(_upcast, kwargs)
        return func(*args, **kwargs)


def _upcast(value):
    if isinstance(value, torch.Tensor) and value.dtype in LOW_PRECISION:
        return value.float()
    if value in LOW_PRECISION:
        return torch.float32
    return value


def float32_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of `model` with its floating parameters and buffers in FP32."""
    return copy.deepcopy(model).float()


def upcast_inputs(inputs):
    """The same inputs, low-precision tensors as FP32 (a NamedTuple stays one)."""
    values = [value.float() if value.dtype in LOW_PRECISION else value for value in inputs]
    return type(inputs)(*values) if hasattr(inputs, "_fields") else type(inputs)(values)
