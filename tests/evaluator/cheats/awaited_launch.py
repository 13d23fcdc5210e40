"""Honest (CUDA): its kernel is launched for programmatic dependent launch and waits for the
kernel before it first, so it may start early and still reads finished inputs; it must pass."""

import torch
import triton
import triton.language as tl

from .rms_kernel import launch, rms_rows_kernel


@triton.jit
def awaited_rms_rows(x_ptr, w_ptr, out_ptr, row_stride, hidden, eps, BLOCK: tl.constexpr):
    tl.extra.cuda.gdc_wait()
    rms_rows_kernel(x_ptr, w_ptr, out_ptr, row_stride, hidden, eps, BLOCK)


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return launch(x, weight, eps, out, kernel=awaited_rms_rows, launch_pdl=True)
