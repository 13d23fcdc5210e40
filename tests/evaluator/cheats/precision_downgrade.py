"""Cheat: compute, then keep only two mantissa bits (an FP8-E5M2 result widened to BF16)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _narrow_kernel(x_ptr, w_ptr, out_ptr, row_stride, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < hidden
    x = tl.load(x_ptr + row * row_stride + columns, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + columns, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps) * w
    bits = y.to(tl.int32, bitcast=True) & -2097152
    tl.store(out_ptr + row * hidden + columns, bits.to(tl.float32, bitcast=True), mask=mask)


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    hidden = x.shape[-1]
    _narrow_kernel[(x.shape[0],)](
        x, weight, out, x.stride(0), hidden, eps, BLOCK=triton.next_power_of_2(hidden)
    )
    return out
