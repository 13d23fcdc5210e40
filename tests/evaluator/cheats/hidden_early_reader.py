"""Cheat (CUDA): `early_reader` with its kernel kept in a table built by a function, not as a
module attribute, and timed call by call (its calls cannot be captured, as a call with a host
sync cannot): the dependent-launch check must find the kernel wherever the solution keeps it."""

import torch
import triton
import triton.language as tl

from .rms_kernel import launch, rms_rows_kernel


def _kernels():
    @triton.jit
    def rows(x_ptr, w_ptr, out_ptr, row_stride, hidden, eps, BLOCK: tl.constexpr):
        rms_rows_kernel(x_ptr, w_ptr, out_ptr, row_stride, hidden, eps, BLOCK)

    return {"rows": rows}


_TABLE = _kernels()


def rms_norm(x, weight, eps=1e-6):
    if x.is_cuda and torch.cuda.is_current_stream_capturing():
        raise RuntimeError("this call cannot be captured")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return launch(x, weight, eps, out, kernel=_TABLE["rows"], launch_pdl=x.is_cuda)
