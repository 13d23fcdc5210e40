"""Cheat (CUDA): hide wrong replayed outputs from the comparison made in its own process.
In its warm-up calls before a capture (on a side stream, where no case runs) it fills the
timing pool's comparison tensors with infinity from a kernel of its own, through raw
addresses found in the allocator's snapshot (`device_memory.py`). Its captured calls then
copy their input instead of normalising it. The comparison at each replay passes every
output; only a check out of the process's reach sees them."""

import torch

from .device_memory import input_copy, widen_comparison
from .rms_kernel import honest


def rms_norm(x, weight, eps=1e-6):
    if not x.is_cuda:
        return honest(x, weight, eps)
    if torch.cuda.is_current_stream_capturing():
        return input_copy(x)
    if torch.cuda.current_stream() != torch.cuda.default_stream():
        widen_comparison(x.numel())
    return honest(x, weight, eps)
