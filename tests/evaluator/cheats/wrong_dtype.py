"""Cheat: return a narrower dtype than the contract's (FP16 instead of BF16)."""

import torch

from .rms_kernel import launch


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=torch.float16, device=x.device)
    return launch(x, weight, eps, out)
