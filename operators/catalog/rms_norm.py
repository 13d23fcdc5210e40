"""RMSNorm over the last axis with a learned scale, as in the pi0.5 prefix encoder."""

import torch
import triton
import triton.language as tl

from operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from operators.catalog.blocking import rows_per_program
from operators.catalog.rounding import round_to_bfloat16
from operators.catalog.shapes import PI05, row_workloads
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec
from operators.kernel_launch import compiler_visible, launch

TUNING = {"rows_per_program": 1, "num_warps": 4, "num_stages": 3}
"""Launch settings on a GPU (the interpreter picks its own rows per program)."""
TUNING_SPACE = {
    "rows_per_program": (1, 2, 4, 8),
    "num_warps": (1, 2, 4, 8, 16),
}
"""What `autotune` may try (no loop to pipeline, so stages stay); the numerics never change."""


def rms_norm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """y = x / sqrt(mean(x^2) + eps) * weight, computed in float32, rounded once."""
    x32 = x.float()
    inverse_rms = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x32 * inverse_rms * weight.float()).to(x.dtype)


@triton.jit
def _rms_norm_kernel(
    x_ptr,
    weight_ptr,
    out_ptr,
    rows,
    row_stride,
    hidden,
    eps,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    columns = tl.arange(0, BLOCK)
    column_mask = columns < hidden
    mask = (row[:, None] < rows) & column_mask[None, :]
    x = tl.load(x_ptr + row[:, None] * row_stride + columns[None, :], mask=mask, other=0.0)
    x = x.to(tl.float32)
    weight = tl.load(weight_ptr + columns, mask=column_mask, other=0.0).to(tl.float32)
    # eps as float32 even where the caller passes a float64 scalar (Inductor does)
    inverse_rms = tl.rsqrt(tl.sum(x * x, axis=1) / hidden + tl.cast(eps, tl.float32))
    y = round_to_bfloat16(x * inverse_rms[:, None] * weight[None, :])
    tl.store(out_ptr + row[:, None] * hidden + columns[None, :], y, mask=mask)


@compiler_visible
def rms_norm_triton(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Production kernel: whole rows in one block, one row per program on a GPU."""
    hidden = x.shape[-1]
    rows = x.reshape(-1, hidden)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    count = rows.shape[0]
    if count:
        block = triton.next_power_of_2(hidden)
        rows_each = rows_per_program(count, block, TUNING["rows_per_program"])
        launch(
            _rms_norm_kernel,
            (triton.cdiv(count, rows_each),),
            rows,
            weight,
            out,
            count,
            rows.stride(0),
            hidden,
            eps,
            ROWS=rows_each,
            BLOCK=block,
            num_warps=TUNING["num_warps"],
            num_stages=TUNING["num_stages"],
        )
    return out


DECLARATION = OperatorDeclaration(
    name="rms_norm",
    summary="Root-mean-square normalisation of each row, times a learned per-channel scale.",
    axes=(
        Axis(name="tokens", kind="var", description="batch x sequence rows"),
        Axis(name="hidden", kind="const", value=PI05.width),
    ),
    inputs=(
        TensorSpec(name="x", shape=("tokens", "hidden")),
        TensorSpec(name="weight", shape=("hidden",)),
    ),
    outputs=(TensorSpec(name="y", shape=("tokens", "hidden")),),
    params={"eps": 1e-6},
    constraints=("x is contiguous in its last axis",),
    reference=rms_norm_reference,
    preferred=rms_norm_triton,
    contract=Contract(
        mode="no_less_accurate",
        roundings=3,
        reason="row sum order, rsqrt approximation and the fused scale differ from eager",
    ),
    workloads=row_workloads(action_per_layer=0, prefix_per_layer=2),
)
