"""A fused kernel for `gated_residual_norm`, shipped as a scripted tune session.

Why it is faster than production (the gated-residual kernel, then the norm's): one launch
replaces two, and each row's sum is normalised while the program still holds it, so nothing
reads the sum back from memory. At the action expert's 50 or 400 rows of 1024 values each of
production's launches takes about 2 us, mostly launch and latency rather than bytes, so the
launch saved is most of the gain (and one gap fewer in the CUDA graph).

Rounding: as production. The gated update is rounded to BF16 and the sum rounded again, as
the model's eager code and gated_residual's bit-exact contract do; the norm reads that rounded
sum in FP32 and rounds its output once. Only the order of the row's sum of squares may differ
from production's norm kernel, which the contract allows.

`kernels/solution_session.py` writes this file, imports made relative, into
`kernels/sessions/tune_gated_residual_norm.json` as the solution's operator file.
"""

import torch
import triton
import triton.language as tl

from ...operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from ...operators.catalog.ada_rms_norm import modulated_rms_norm
from ...operators.catalog.blocking import rows_per_program
from ...operators.catalog.rounding import round_to_bfloat16
from ...operators.kernel_launch import compiler_visible, launch

TUNING = {"rows_per_program": 1, "num_warps": 4}
"""Launch settings on a GPU: rows per program (each a whole row of 1024), warps. One row a
program keeps 400 programs in flight at batch 8 and 50 at batch 1, as production's norm."""
TUNING_SPACE = {
    "rows_per_program": (1, 2, 4),
    "num_warps": (4, 2, 8),
}
"""What `autotune` may try; the numerics never change with either."""


@triton.jit
def _gated_residual_norm_kernel(
    residual_ptr,
    update_ptr,
    gate_ptr,
    scale_ptr,
    shift_ptr,
    hidden_ptr,
    normed_ptr,
    rows,
    tokens,
    width,
    residual_batch_stride,
    residual_token_stride,
    update_batch_stride,
    update_token_stride,
    gate_batch_stride,
    scale_batch_stride,
    shift_batch_stride,
    eps,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    batch = row // tokens
    token = row % tokens
    columns = tl.arange(0, BLOCK)[None, :]
    mask = (row[:, None] < rows) & (columns < width)
    residual_rows = (batch * residual_batch_stride + token * residual_token_stride)[:, None]
    update_rows = (batch * update_batch_stride + token * update_token_stride)[:, None]
    residual = tl.load(residual_ptr + residual_rows + columns, mask=mask, other=0.0)
    update = tl.load(update_ptr + update_rows + columns, mask=mask, other=0.0)
    gate = tl.load(gate_ptr + (batch * gate_batch_stride)[:, None] + columns, mask=mask, other=0.0)
    product = round_to_bfloat16(update.to(tl.float32) * gate.to(tl.float32))
    hidden = round_to_bfloat16(residual.to(tl.float32) + product)  # FP32 holding a BF16 value
    out_rows = row[:, None] * width
    tl.store(hidden_ptr + out_rows + columns, hidden, mask=mask)
    scale = tl.load(scale_ptr + (batch * scale_batch_stride)[:, None] + columns, mask=mask)
    shift = tl.load(shift_ptr + (batch * shift_batch_stride)[:, None] + columns, mask=mask)
    normed = modulated_rms_norm(hidden, scale, shift, width, eps)
    tl.store(normed_ptr + out_rows + columns, round_to_bfloat16(normed), mask=mask)


@compiler_visible
def gated_residual_norm_kernel(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused: the gated residual and its norm in one launch, whole rows per program."""
    batch, tokens, width = residual.shape
    residual, update, gate, scale, shift = (
        t if t.stride(-1) == 1 else t.contiguous() for t in (residual, update, gate, scale, shift)
    )
    hidden = torch.empty((batch, tokens, width), dtype=residual.dtype, device=residual.device)
    normed = torch.empty_like(hidden)
    if hidden.numel():
        rows = batch * tokens
        block = triton.next_power_of_2(width)
        rows_each = rows_per_program(rows, block, TUNING["rows_per_program"])
        launch(
            _gated_residual_norm_kernel,
            (triton.cdiv(rows, rows_each),),
            residual,
            update,
            gate,
            scale,
            shift,
            hidden,
            normed,
            rows,
            tokens,
            width,
            residual.stride(0),
            residual.stride(1),
            update.stride(0),
            update.stride(1),
            gate.stride(0),
            scale.stride(0),
            shift.stride(0),
            eps,
            ROWS=rows_each,
            BLOCK=block,
            num_warps=TUNING["num_warps"],
        )
    return hidden, normed
