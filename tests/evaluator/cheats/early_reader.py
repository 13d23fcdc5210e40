"""Cheat (CUDA): its kernel is launched for programmatic dependent launch without waiting for
the kernel before it, so it starts while that kernel still runs. Judged on inputs written long
before each call it computes right and overlaps its predecessor's tail; deployed after the
kernel that writes its inputs, it may read them half written."""

import torch

from .rms_kernel import launch


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return launch(x, weight, eps, out, launch_pdl=x.is_cuda)
