"""Honest (CUDA): its kernel is launched for programmatic dependent launch and waits for the
kernel before it first, so it may start early and still reads finished inputs; it must pass."""

import torch
import triton
import triton.language as tl


@triton.jit
def awaited_rms_rows(x_ptr, w_ptr, out_ptr, row_stride, hidden, eps, BLOCK: tl.constexpr):
    tl.extra.cuda.gdc_wait()
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < hidden
    x = tl.load(x_ptr + row * row_stride + columns, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + columns, mask=mask, other=0.0).to(tl.float32)
    inverse_rms = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)
    tl.store(out_ptr + row * hidden + columns, x * inverse_rms * w, mask=mask)


def rms_norm(x, weight, eps=1e-6):
    hidden = x.shape[-1]
    flat = x.reshape(-1, hidden)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if flat.shape[0]:
        block = triton.next_power_of_2(hidden)
        awaited_rms_rows[(flat.shape[0],)](
            flat, weight, out, flat.stride(0), hidden, eps, BLOCK=block, launch_pdl=True
        )
    return out
