"""Cheat: cast the inputs to a narrower format (FP8) before the kernel and back after."""

import torch

from .rms_kernel import honest


def rms_norm(x, weight, eps=1e-6):
    narrow = x.to(torch.float8_e5m2).to(x.dtype)
    return honest(narrow, weight, eps)
