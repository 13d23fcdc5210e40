"""Cheat (CUDA): at import, widen the contract of the registry's declaration in place
(`object.__setattr__` passes a frozen model by), then compute honestly in the cases and
return zeros from every captured call. Were the timed outputs compared under the registry's
object, any output would pass them."""

import torch

from operators import REGISTRY

from .rms_kernel import honest

object.__setattr__(REGISTRY.declaration("rms_norm").contract, "roundings", 10**6)


def rms_norm(x, weight, eps=1e-6):
    if x.is_cuda and torch.cuda.is_current_stream_capturing():
        return honest(torch.zeros_like(x), weight, eps)  # a memset and its own kernel
    return honest(x, weight, eps)
