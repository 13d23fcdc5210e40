"""Gated residual of the pi0.5 action expert: the block's update scaled by the time-step gate.

Bit-exact with eager BF16: the product is rounded to BF16 before the add, so a kernel that
fuses the two into one rounding (FMA contraction) breaks the contract.
"""

import torch
import triton
import triton.language as tl

from ...operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from ...operators.catalog.blocking import interpreter_block, rows_per_program
from ...operators.catalog.rounding import round_to_bfloat16
from ...operators.catalog.shapes import PI05, action_workloads
from ...operators.contract import Contract
from ...operators.declaration import Axis, OperatorDeclaration, TensorSpec
from ...operators.kernel_launch import compiler_visible, launch

TUNING = {"block": 1024, "rows_per_program": 1, "num_warps": 4, "num_stages": 3}
"""Launch settings on a GPU: columns per program, rows per program, warps, pipeline stages."""
TUNING_SPACE = {
    "block": (256, 512, 1024, 2048, 4096),
    "rows_per_program": (1, 2, 4),
    "num_warps": (1, 2, 4, 8),
}
"""What `autotune` may try (no loop to pipeline, so stages stay); the numerics never change."""


def gated_residual_reference(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor
) -> torch.Tensor:
    """out = residual + update * gate, each eager BF16 op rounding its own result."""
    return residual + update * gate[:, None, :]


@triton.jit
def _gated_residual_kernel(
    residual_ptr,
    update_ptr,
    gate_ptr,
    out_ptr,
    rows,
    tokens,
    hidden,
    residual_batch_stride,
    residual_token_stride,
    update_batch_stride,
    update_token_stride,
    gate_batch_stride,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    batch = row // tokens
    token = row % tokens
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (row[:, None] < rows) & (columns[None, :] < hidden)
    residual_rows = (batch * residual_batch_stride + token * residual_token_stride)[:, None]
    update_rows = (batch * update_batch_stride + token * update_token_stride)[:, None]
    gate_rows = (batch * gate_batch_stride)[:, None]
    residual = tl.load(residual_ptr + residual_rows + columns[None, :], mask=mask, other=0.0)
    update = tl.load(update_ptr + update_rows + columns[None, :], mask=mask, other=0.0)
    gate = tl.load(gate_ptr + gate_rows + columns[None, :], mask=mask, other=0.0)
    product = round_to_bfloat16(update.to(tl.float32) * gate.to(tl.float32))
    out = round_to_bfloat16(residual.to(tl.float32) + product)
    tl.store(out_ptr + row[:, None] * hidden + columns[None, :], out, mask=mask)


@compiler_visible
def gated_residual_triton(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor
) -> torch.Tensor:
    """Production kernel: one program per (rows, 1024 columns), product rounded before the add."""
    batch, tokens, hidden = residual.shape
    residual, update, gate = (
        t if t.stride(-1) == 1 else t.contiguous() for t in (residual, update, gate)
    )
    out = torch.empty((batch, tokens, hidden), dtype=residual.dtype, device=residual.device)
    if out.numel():
        rows = batch * tokens
        block = interpreter_block(hidden, min(TUNING["block"], triton.next_power_of_2(hidden)))
        rows_each = rows_per_program(rows, block, TUNING["rows_per_program"])
        launch(
            _gated_residual_kernel,
            (triton.cdiv(rows, rows_each), triton.cdiv(hidden, block)),
            residual,
            update,
            gate,
            out,
            rows,
            tokens,
            hidden,
            residual.stride(0),
            residual.stride(1),
            update.stride(0),
            update.stride(1),
            gate.stride(0),
            ROWS=rows_each,
            BLOCK=block,
            num_warps=TUNING["num_warps"],
            num_stages=TUNING["num_stages"],
        )
    return out


DECLARATION = OperatorDeclaration(
    name="gated_residual",
    summary="Residual plus the block's update scaled per batch row by the modulation gate.",
    axes=(
        Axis(name="batch", kind="var"),
        Axis(name="tokens", kind="var", description="action tokens per batch row"),
        Axis(name="hidden", kind="const", value=PI05.width),
    ),
    inputs=(
        TensorSpec(name="residual", shape=("batch", "tokens", "hidden")),
        TensorSpec(name="update", shape=("batch", "tokens", "hidden")),
        TensorSpec(name="gate", shape=("batch", "hidden"), description="broadcast over tokens"),
    ),
    outputs=(TensorSpec(name="out", shape=("batch", "tokens", "hidden")),),
    constraints=("every input is contiguous in its last axis",),
    reference=gated_residual_reference,
    preferred=gated_residual_triton,
    contract=Contract(
        mode="bit_exact",
        reason="two BF16 roundings like eager, the product then the sum (FMA is forbidden)",
    ),
    # the model no longer calls it: its kernel runs inside gated_residual_norm's production
    # path once a layer (and gated_down_projection's where that keeps production)
    workloads=action_workloads(per_layer=1),
)
