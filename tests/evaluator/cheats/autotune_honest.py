"""Not a cheat: an honest RMSNorm kernel under `@triton.autotune` with two configurations.
The interpreter has no benchmarker, so the evaluator runs the first configuration and says
so; the solution must pass."""

import torch
import triton
import triton.language as tl

from .rms_kernel import nearest_bfloat16


@triton.autotune(
    configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)],
    key=["hidden"],
)
@triton.jit
def tuned_rows_kernel(x_ptr, w_ptr, out_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < hidden
    x = tl.load(x_ptr + row * hidden + columns, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + columns, mask=mask, other=0.0).to(tl.float32)
    inverse_rms = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)
    y = nearest_bfloat16(x * inverse_rms * w)
    tl.store(out_ptr + row * hidden + columns, y, mask=mask)


def rms_norm(x, weight, eps=1e-6):
    hidden = x.shape[-1]
    flat = x.reshape(-1, hidden).contiguous()
    out = torch.empty(flat.shape, dtype=x.dtype, device=x.device)
    if flat.shape[0]:
        block = triton.next_power_of_2(hidden)
        tuned_rows_kernel[(flat.shape[0],)](flat, weight, out, hidden, eps, BLOCK=block)
    return out.view(x.shape)
