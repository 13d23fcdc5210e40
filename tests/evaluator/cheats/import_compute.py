"""Cheat: run tensor compute while being imported (e.g. to precompute answers)."""

import torch

from .rms_kernel import honest

_TABLE = torch.arange(1024, dtype=torch.float32).sqrt()


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)
