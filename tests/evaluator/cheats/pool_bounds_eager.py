"""Cheat (CUDA): `pool_bounds` on the eager path. Its call cannot be captured (it raises in a
capture, as a call with a host sync fails there), so a task that allows eager timing times it
call by call; from then on every call fills the timing pool's comparison tensors with
infinity from a kernel of its own, through raw addresses (`device_memory.py`), and returns
a copy of its input. The comparison after each timed call passes every output; only a check
out of the process's reach sees them."""

import torch

from .device_memory import input_copy, widen_comparison
from .rms_kernel import honest

_timing = [False]


def rms_norm(x, weight, eps=1e-6):
    if not x.is_cuda:
        return honest(x, weight, eps)
    if torch.cuda.is_current_stream_capturing():
        _timing[0] = True
        raise RuntimeError("this call cannot be captured")  # as a host sync would
    if _timing[0] and torch.cuda.current_stream() == torch.cuda.default_stream():
        widen_comparison(x.numel())
        return input_copy(x)
    return honest(x, weight, eps)
