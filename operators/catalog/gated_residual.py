"""Gated residual of the pi0.5 action expert: the block's update scaled by the time-step gate.

Bit-exact with eager BF16: the product is rounded to BF16 before the add, so a kernel that
fuses the two into one rounding (FMA contraction) breaks the contract.
"""

import torch
import triton
import triton.language as tl

from operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from operators.catalog.rounding import round_to_bfloat16
from operators.catalog.shapes import PI05, action_workloads
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec

BLOCK_HIDDEN = 1024


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
    tokens,
    hidden,
    residual_batch_stride,
    residual_token_stride,
    update_batch_stride,
    update_token_stride,
    gate_batch_stride,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    batch = row // tokens
    token = row % tokens
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = columns < hidden
    residual_row = residual_ptr + batch * residual_batch_stride + token * residual_token_stride
    update_row = update_ptr + batch * update_batch_stride + token * update_token_stride
    residual = tl.load(residual_row + columns, mask=mask, other=0.0).to(tl.float32)
    update = tl.load(update_row + columns, mask=mask, other=0.0).to(tl.float32)
    gate = tl.load(gate_ptr + batch * gate_batch_stride + columns, mask=mask, other=0.0)
    product = round_to_bfloat16(update * gate.to(tl.float32))
    out = round_to_bfloat16(residual + product)
    tl.store(out_ptr + row * hidden + columns, out, mask=mask)


def gated_residual_triton(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor
) -> torch.Tensor:
    """Production kernel: one program per (row, 1024 columns), product rounded before the add."""
    batch, tokens, hidden = residual.shape
    residual, update, gate = (
        t if t.stride(-1) == 1 else t.contiguous() for t in (residual, update, gate)
    )
    out = torch.empty((batch, tokens, hidden), dtype=residual.dtype, device=residual.device)
    if out.numel():
        block = min(BLOCK_HIDDEN, triton.next_power_of_2(hidden))
        _gated_residual_kernel[(batch * tokens, triton.cdiv(hidden, block))](
            residual,
            update,
            gate,
            out,
            tokens,
            hidden,
            residual.stride(0),
            residual.stride(1),
            update.stride(0),
            update.stride(1),
            gate.stride(0),
            BLOCK=block,
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
    workloads=action_workloads(),
)
