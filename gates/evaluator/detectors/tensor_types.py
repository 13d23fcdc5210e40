"""Lazy, subclassed or decorated output tensors that behave differently when inspected."""

import weakref

import torch

from gates.evaluator.detectors import CheatDetected


class SubclassedOutput(CheatDetected):
    """An output is a torch.Tensor subclass (or not a tensor) that can compute or fake values
    when the evaluator reads it."""


class LazyOutput(CheatDetected):
    """An output is a meta, fake, functional or otherwise storage-less tensor whose values are
    not materialised."""


class DecoratedOutput(CheatDetected):
    """An output carries Python attributes or weak-reference finalizers that run candidate
    code when the evaluator drops it."""


def check_output_tensor(name: str, tensor, device: torch.device) -> None:
    """Raise unless `tensor` is a plain, materialised torch.Tensor with no attachments."""
    if type(tensor) is not torch.Tensor:
        raise SubclassedOutput(f"output {name!r} is a {type(tensor).__qualname__}, not Tensor")
    if tensor.is_meta or tensor.layout != torch.strided:
        raise LazyOutput(f"output {name!r} has no materialised strided storage")
    if tensor.is_sparse or tensor.is_quantized or tensor.is_nested:
        raise LazyOutput(f"output {name!r} is a sparse/quantized/nested tensor")
    try:
        tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        raise LazyOutput(f"output {name!r} has no real storage") from None
    if tensor.device != device and tensor.device.type != device.type:
        return
    if getattr(tensor, "__dict__", None):
        raise DecoratedOutput(f"output {name!r} carries Python attributes")
    if weakref.getweakrefcount(tensor):
        raise DecoratedOutput(f"output {name!r} has weak references (finalizers) attached")
    if tensor.requires_grad or tensor.grad_fn is not None:
        raise LazyOutput(f"output {name!r} is part of an autograd graph")
