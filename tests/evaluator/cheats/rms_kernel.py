"""An honest RMSNorm row kernel the cheat fixtures build on (shipped beside each cheat)."""

import torch
import triton
import triton.language as tl


@triton.jit
def nearest_bfloat16(x):
    """x (FP32) rounded to the nearest BF16 value as a GPU converts it; the interpreter's
    conversion truncates, which would be a rounding less accurate than stock's."""
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).to(tl.float32, bitcast=True)


@triton.jit
def rms_rows_kernel(x_ptr, w_ptr, out_ptr, row_stride, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < hidden
    x = tl.load(x_ptr + row * row_stride + columns, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + columns, mask=mask, other=0.0).to(tl.float32)
    inverse_rms = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)
    y = nearest_bfloat16(x * inverse_rms * w)
    tl.store(out_ptr + row * hidden + columns, y, mask=mask)


def launch(
    x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor, rows=None,
    kernel=rms_rows_kernel, **options,
):  # fmt: skip
    """Normalise the first `rows` rows of x (all rows by default) into out with `kernel`
    (launch `options` such as `launch_pdl` passed on)."""
    hidden = x.shape[-1]
    flat = x.reshape(-1, hidden)
    count = flat.shape[0] if rows is None else rows
    if count:
        block = triton.next_power_of_2(hidden)
        kernel[(count,)](flat, weight, out, flat.stride(0), hidden, eps, BLOCK=block, **options)
    return out


def honest(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return launch(x, weight, eps, torch.empty(x.shape, dtype=x.dtype, device=x.device))
