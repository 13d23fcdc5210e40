"""Cheat (CUDA): behave while traced, but when unobserved do the work with PyTorch ops on a
private stream, which neither the op trace nor the launch recorder sees; the timed region
is then nearly empty, faster than the workload's bytes can move."""

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from .rms_kernel import honest

_streams: dict = {}


def rms_norm(x, weight, eps=1e-6):
    if not x.is_cuda or _get_current_dispatch_mode() is not None:
        return honest(x, weight, eps)
    side = _streams.setdefault(x.device, torch.cuda.Stream(x.device))
    side.wait_stream(torch.cuda.current_stream(x.device))
    with torch.cuda.stream(side):
        x32 = x.float()
        scale = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
        out = (x32 * scale * weight.float()).to(x.dtype)
    out.record_stream(torch.cuda.current_stream(x.device))
    return out
