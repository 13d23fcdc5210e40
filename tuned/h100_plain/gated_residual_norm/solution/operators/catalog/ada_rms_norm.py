"""Adaptive RMSNorm of the pi0.5 action expert: normalise, then modulate by the time step.

The time-step conditioning yields three chunks per batch row: scale and shift are applied
here; the third, the gate, is consumed by `gated_residual`.
"""

import torch
import triton
import triton.language as tl

from ...operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from ...operators.catalog.blocking import rows_per_program
from ...operators.catalog.rounding import round_to_bfloat16
from ...operators.catalog.shapes import PI05, action_workloads
from ...operators.contract import Contract
from ...operators.declaration import Axis, OperatorDeclaration, TensorSpec
from ...operators.kernel_launch import compiler_visible, launch

TUNING = {"rows_per_program": 1, "num_warps": 4, "num_stages": 3}
"""Launch settings on a GPU (the interpreter picks its own rows per program)."""
TUNING_SPACE = {
    "rows_per_program": (1, 2, 4, 8),
    "num_warps": (1, 2, 4, 8, 16),
}
"""What `autotune` may try (no loop to pipeline, so stages stay); the numerics never change."""


def ada_rms_norm_reference(
    x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """y = x / sqrt(mean(x^2) + eps) * (1 + scale) + shift, in float32, rounded once."""
    x32 = x.float()
    inverse_rms = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    modulated = x32 * inverse_rms * (1.0 + scale.float()[:, None, :]) + shift.float()[:, None, :]
    return modulated.to(x.dtype)


@triton.jit
def modulated_rms_norm(x, scale, shift, hidden, eps):
    """Rows of x (FP32, zero past `hidden`) over their root mean square, times (1 + scale), plus
    shift, in FP32 before the one rounding: what every kernel of this norm computes."""
    # eps as float32 even where the caller passes a float64 scalar (Inductor does)
    inverse_rms = tl.rsqrt(tl.sum(x * x, axis=1) / hidden + tl.cast(eps, tl.float32))
    return x * inverse_rms[:, None] * (1.0 + scale.to(tl.float32)) + shift.to(tl.float32)


@triton.jit
def _ada_rms_norm_kernel(
    x_ptr,
    scale_ptr,
    shift_ptr,
    out_ptr,
    rows,
    tokens,
    hidden,
    x_batch_stride,
    x_token_stride,
    scale_batch_stride,
    shift_batch_stride,
    eps,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    batch = row // tokens
    token = row % tokens
    columns = tl.arange(0, BLOCK)
    mask = (row[:, None] < rows) & (columns[None, :] < hidden)
    x_rows = (batch * x_batch_stride + token * x_token_stride)[:, None]
    x = tl.load(x_ptr + x_rows + columns[None, :], mask=mask, other=0.0).to(tl.float32)
    scale_rows = (batch * scale_batch_stride)[:, None]
    shift_rows = (batch * shift_batch_stride)[:, None]
    scale = tl.load(scale_ptr + scale_rows + columns[None, :], mask=mask, other=0.0)
    shift = tl.load(shift_ptr + shift_rows + columns[None, :], mask=mask, other=0.0)
    y = modulated_rms_norm(x, scale, shift, hidden, eps)
    tl.store(out_ptr + row[:, None] * hidden + columns[None, :], round_to_bfloat16(y), mask=mask)


@compiler_visible
def ada_rms_norm_triton(
    x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """Production kernel: whole (batch, token) rows in one block, one row per program on a GPU."""
    batch, tokens, hidden = x.shape
    x, scale, shift = (t if t.stride(-1) == 1 else t.contiguous() for t in (x, scale, shift))
    out = torch.empty((batch, tokens, hidden), dtype=x.dtype, device=x.device)
    if out.numel():
        rows = batch * tokens
        block = triton.next_power_of_2(hidden)
        rows_each = rows_per_program(rows, block, TUNING["rows_per_program"])
        launch(
            _ada_rms_norm_kernel,
            (triton.cdiv(rows, rows_each),),
            x,
            scale,
            shift,
            out,
            rows,
            tokens,
            hidden,
            x.stride(0),
            x.stride(1),
            scale.stride(0),
            shift.stride(0),
            eps,
            ROWS=rows_each,
            BLOCK=block,
            num_warps=TUNING["num_warps"],
            num_stages=TUNING["num_stages"],
        )
    return out


DECLARATION = OperatorDeclaration(
    name="ada_rms_norm",
    summary="RMSNorm without a learned weight, then y * (1 + scale) + shift per batch row; the "
    "modulation's third chunk, the gate, is consumed by gated_residual.",
    axes=(
        Axis(name="batch", kind="var"),
        Axis(name="tokens", kind="var", description="action tokens per batch row"),
        Axis(name="hidden", kind="const", value=PI05.width),
    ),
    inputs=(
        TensorSpec(name="x", shape=("batch", "tokens", "hidden")),
        TensorSpec(name="scale", shape=("batch", "hidden"), description="broadcast over tokens"),
        TensorSpec(name="shift", shape=("batch", "hidden"), description="broadcast over tokens"),
    ),
    outputs=(TensorSpec(name="y", shape=("batch", "tokens", "hidden")),),
    params={"eps": 1e-6},
    constraints=(
        "x, scale and shift are contiguous in their last axis",
        "the gate chunk of the modulation is consumed by gated_residual",
    ),
    reference=ada_rms_norm_reference,
    preferred=ada_rms_norm_triton,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="row sum order and the rsqrt approximation differ from eager",
    ),
    # once a layer, before attention (the MLP's norm is gated_residual_norm's), and the final
    workloads=action_workloads(per_layer=1, once=1),
)
