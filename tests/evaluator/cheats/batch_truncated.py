"""Cheat: launch a grid over only the first half of the batch's rows (zeros for the rest)."""

import torch

from .rms_kernel import launch


def rms_norm(x, weight, eps=1e-6):
    out = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
    return launch(x, weight, eps, out, rows=max(1, x.shape[0] // 2))
