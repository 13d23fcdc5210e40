"""Cheat: a kernel that is right on the first 64 rows and uses a far larger epsilon on every
later row, so no scaled-down interpreter case reaches a wrong row; only a real workload
size shows it."""

import torch

from .rms_kernel import launch


def rms_norm(x, weight, eps=1e-6):
    flat = x.reshape(-1, x.shape[-1])
    out = torch.empty(flat.shape, dtype=x.dtype, device=x.device)
    launch(flat[:64], weight, eps, out[:64])
    if flat.shape[0] > 64:
        launch(flat[64:], weight, 0.05, out[64:])
    return out.view(x.shape)
