"""The gated GELU of the Gemma-style MLP: tanh GELU of the gate projection times the up one."""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ...operators import triton_runtime  # noqa: F401  (selects the interpreter before any kernel)
from ...operators.catalog.blocking import interpreter_block, rows_per_program
from ...operators.catalog.rounding import round_to_bfloat16
from ...operators.catalog.shapes import PI05, row_workloads
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
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


def gated_gelu_reference(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """out = gelu_tanh(gate) * up in eager BF16 (the GELU rounded, then the product)."""
    return F.gelu(gate, approximate="tanh") * up


@triton.jit
def _gated_gelu_kernel(
    gate_ptr,
    up_ptr,
    out_ptr,
    rows,
    columns,
    gate_row_stride,
    up_row_stride,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    offsets = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (row[:, None] < rows) & (offsets[None, :] < columns)
    gate = tl.load(
        gate_ptr + row[:, None] * gate_row_stride + offsets[None, :], mask=mask, other=0.0
    )
    up = tl.load(up_ptr + row[:, None] * up_row_stride + offsets[None, :], mask=mask, other=0.0)
    gate = gate.to(tl.float32)
    inner = SQRT_2_OVER_PI * (gate + 0.044715 * gate * gate * gate)
    # 0.5 * (1 + tanh(z)) == sigmoid(2z): no cancellation for negative gates; the clamp keeps
    # exp finite where the activation is zero to within BF16 anyway.
    activated = round_to_bfloat16(gate / (1.0 + tl.exp(tl.minimum(-2.0 * inner, 80.0))))
    out = round_to_bfloat16(activated * up.to(tl.float32))
    tl.store(out_ptr + row[:, None] * columns + offsets[None, :], out, mask=mask)


@compiler_visible
def gated_gelu_triton(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """Production kernel: one program per (rows, 1024 columns), GELU rounded like eager."""
    tokens, columns = gate.shape
    gate, up = (t if t.stride(-1) == 1 else t.contiguous() for t in (gate, up))
    out = torch.empty((tokens, columns), dtype=gate.dtype, device=gate.device)
    if out.numel():
        block = interpreter_block(columns, min(TUNING["block"], triton.next_power_of_2(columns)))
        rows_each = rows_per_program(tokens, block, TUNING["rows_per_program"])
        launch(
            _gated_gelu_kernel,
            (triton.cdiv(tokens, rows_each), triton.cdiv(columns, block)),
            gate,
            up,
            out,
            tokens,
            columns,
            gate.stride(0),
            up.stride(0),
            ROWS=rows_each,
            BLOCK=block,
            num_warps=TUNING["num_warps"],
            num_stages=TUNING["num_stages"],
        )
    return out


DECLARATION = OperatorDeclaration(
    name="gated_gelu",
    summary="tanh-approximated GELU of the gate projection, times the up projection.",
    axes=(
        Axis(name="tokens", kind="var", description="batch x sequence rows"),
        Axis(name="mlp", kind="const", value=PI05.mlp_width),
    ),
    inputs=(
        TensorSpec(name="gate", shape=("tokens", "mlp")),
        TensorSpec(name="up", shape=("tokens", "mlp")),
    ),
    outputs=(TensorSpec(name="out", shape=("tokens", "mlp")),),
    constraints=("gate and up are contiguous in their last axis",),
    reference=gated_gelu_reference,
    preferred=gated_gelu_triton,
    contract=Contract(
        mode="no_less_accurate",
        roundings=4,
        reason="tanh is computed through exp (sigmoid form), which can move the rounded GELU "
        "by one BF16 step before the product",
    ),
    workloads=row_workloads(),
)
