"""Cheat: the call count kept on the device, in a buffer the solution's own kernel increments
at every launch (no Python state changes); a later kernel could branch on it."""

import torch
import triton
import triton.language as tl

from .rms_kernel import honest

_COUNTER: list[torch.Tensor] = []


@triton.jit
def _count(counter_ptr):
    tl.atomic_add(counter_ptr, 1)


def rms_norm(x, weight, eps=1e-6):
    if not _COUNTER:
        _COUNTER.append(torch.empty(1, dtype=torch.int32, device=x.device))
    _count[(1,)](_COUNTER[0])
    return honest(x, weight, eps)
