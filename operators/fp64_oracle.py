"""The FP64 oracle (self-contained: the registration gates load this file into the tree
under test's interpreter): an operator's Torch reference run with every floating tensor in FP64.

References name their working precision (`x.float()`, `.to(x.dtype)`), so FP64 inputs alone
would still be cast down to FP32 inside. `Float64Everywhere` is a dispatch mode that turns
every floating dtype an ATen call asks for into FP64 and upcasts floating inputs, so the
reference's own code runs unchanged at FP64.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

NARROWER_FLOATS = (torch.bfloat16, torch.float16, torch.float32)


class Float64Everywhere(TorchDispatchMode):
    """Every ATen call's floating `dtype` becomes FP64; floating inputs of ops that write into
    none of their arguments are upcast (an in-place op keeps writing into its own tensor)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if kwargs.get("dtype") in NARROWER_FLOATS:
            kwargs["dtype"] = torch.float64
        if not func._schema.is_mutable:
            args = torch.utils._pytree.tree_map(_upcast, args)
            kwargs = torch.utils._pytree.tree_map(_upcast, kwargs)
        return func(*args, **kwargs)


def _upcast(value):
    if isinstance(value, torch.Tensor) and value.dtype in NARROWER_FLOATS:
        return value.double()
    if isinstance(value, torch.dtype) and value in NARROWER_FLOATS:
        return torch.float64
    return value


def fp64_outputs(reference, inputs: list[torch.Tensor], params: dict) -> tuple[torch.Tensor, ...]:
    """The reference's outputs computed in FP64 on `inputs` (their values, upcast exactly)."""
    wide = [_upcast(t) for t in inputs]
    with torch.no_grad(), Float64Everywhere():
        result = reference(*wide, **params)
    outputs = tuple(result) if isinstance(result, tuple | list) else (result,)
    return tuple(t.double() for t in outputs)


def fp64_terms(reference, inputs: list, params: dict) -> tuple[torch.Tensor, ...]:
    """The reference in FP64 on each floating input's magnitude: the size of the terms behind
    each output element (what the accuracy rule's floors scale with)."""
    magnitudes = [
        t.abs() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs
    ]
    return fp64_outputs(reference, magnitudes, params)
