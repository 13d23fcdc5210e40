"""Cheat (CUDA): its first captured call runs its own kernel; every later captured call runs a
kernel that is not the solution's (the registry's production kernel, standing for any foreign
or precompiled kernel launched without an ATen op). A verdict that inspects one capture and
times others would trust graphs it never looked at."""

import torch

from .rms_kernel import honest

_captured_calls = [0]


def rms_norm(x, weight, eps=1e-6):
    if not (x.is_cuda and torch.cuda.is_current_stream_capturing()):
        return honest(x, weight, eps)
    _captured_calls[0] += 1
    if _captured_calls[0] == 1:
        return honest(x, weight, eps)
    from operators import REGISTRY

    return REGISTRY.declaration("rms_norm").preferred(x, weight, eps=eps)
