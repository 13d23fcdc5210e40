"""Cheat: write only even rows, hoping the allocator hands back memory that still holds the
odd rows from an earlier identical call."""

import torch

from .rms_kernel import rms_rows_kernel


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    hidden = x.shape[-1]
    import triton

    for row in range(0, x.shape[0], 2):
        rms_rows_kernel[(1,)](
            x[row],
            weight,
            out[row],
            x.stride(0),
            hidden,
            eps,
            BLOCK=triton.next_power_of_2(hidden),
        )
    return out
