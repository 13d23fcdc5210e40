"""Cheat: use the input as scratch space and leave it changed."""

import torch

from .rms_kernel import launch


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    launch(x, weight, eps, out)
    x.zero_()
    return out
