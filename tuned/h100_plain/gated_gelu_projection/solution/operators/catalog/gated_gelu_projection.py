"""A fused kernel for `gated_gelu_projection`, shipped as a scripted tune session.

Why it is faster than production (two BLAS projections, then the gated-GELU kernel): one
GEMM-shaped kernel reads each block of x once, multiplies it by both weights into two FP32
accumulators and applies gelu_tanh(gate) * up in its epilogue, so the (tokens, mlp) gate and
up projections are never written to memory nor read back, and one launch replaces three. At
50 tokens the weights' 16 MB bound the time; the tiles there give one program per
multiprocessor. Where the BLAS's products are the faster (many rows), a regime's TUNING entry
is None and the call takes production's path: the same two products and gated-GELU kernel.

`benchmarks/tile_sweep.py gated_gelu_projection --write` chooses each regime's tile (or None)
on the GPU; `kernels/solution_session.py` writes this file, imports made relative, into
`kernels/sessions/tune_gated_gelu_projection.json` as the solution's operator file.
"""

import torch
import triton
import triton.language as tl

from ...operators import triton_runtime
from ...operators.catalog.rounding import round_to_bfloat16
from ...operators.kernel_launch import compiler_visible, launch

TUNING = {
    "gemv": {
        "joined": 1,
        "block_m": 64,
        "block_n": 32,
        "block_k": 128,
        "num_warps": 4,
        "num_stages": 5,
    },
    "rows512": {
        "joined": 1,
        "block_m": 128,
        "block_n": 128,
        "block_k": 64,
        "num_warps": 8,
        "num_stages": 4,
    },
    "rows1024": {
        "joined": 1,
        "block_m": 64,
        "block_n": 64,
        "block_k": 64,
        "num_warps": 4,
        "num_stages": 3,
    },
    "gemm": {
        "joined": 1,
        "block_m": 128,
        "block_n": 128,
        "block_k": 64,
        "num_warps": 8,
        "num_stages": 3,
    },
}
"""Tiles on a GPU by token count, the fastest of `tile_sweep.py` (H200, 2026-12-03 19:45 UTC:
7.30 / 25.77 / 17.65 / 147.01 us at 50 / 576 / 400 / 4608 rows against production's 12.32 /
23.73 / 19.06 / 145.06, all with the weights joined). `block_n` counts columns of each
weight."""
TUNING_SPACE = {
    "joined": (1, 0),
    "block_m": (64, 128),
    "block_n": (32, 64, 128),
    "block_k": (64, 128),
    "num_warps": (4, 8),
    "num_stages": (3, 4, 5),
}
"""What `benchmarks/tile_sweep.py` tries in every regime, the joined weights first (`joined`:
both weights' blocks side by side in one product per K step, see `_joined_products`)."""
REGIME_MAX_TOKENS = {"gemv": 64, "rows512": 512, "rows1024": 1024}
"""The most tokens each regime takes, in order; more go to `gemm`."""
GROUP_M = 8
"""Row blocks that walk the same weight columns together, so those stay in L2."""
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit
def _paired_products(
    x_block,
    gate_block,
    up_block,
    row_in,
    column_in,
    hidden,
    x_column_stride,
    gate_column_stride,
    up_column_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    INTERPRETED: tl.constexpr,
):
    """x times each weight block: one product per weight and K step, sharing x's block."""
    inner = tl.arange(0, BLOCK_K)
    gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, hidden, BLOCK_K):
        if EVEN_K:
            x = tl.load(x_block, mask=row_in[:, None], other=0.0)
            gate_weight = tl.load(gate_block, mask=column_in[None, :], other=0.0)
            up_weight = tl.load(up_block, mask=column_in[None, :], other=0.0)
        else:
            inner_in = inner < hidden - start
            x = tl.load(x_block, mask=row_in[:, None] & inner_in[None, :], other=0.0)
            weight_in = inner_in[:, None] & column_in[None, :]
            gate_weight = tl.load(gate_block, mask=weight_in, other=0.0)
            up_weight = tl.load(up_block, mask=weight_in, other=0.0)
        if INTERPRETED:  # the interpreter's BF16 dot is wrong; BF16 products are exact in FP32
            x = x.to(tl.float32)
            gate = tl.dot(x, gate_weight.to(tl.float32), gate, input_precision="ieee")
            up = tl.dot(x, up_weight.to(tl.float32), up, input_precision="ieee")
        else:  # x is read once for both projections
            gate = tl.dot(x, gate_weight, gate)
            up = tl.dot(x, up_weight, up)
        x_block += BLOCK_K * x_column_stride
        gate_block += BLOCK_K * gate_column_stride
        up_block += BLOCK_K * up_column_stride
    return gate, up


@triton.jit
def _joined_products(
    x_block,
    gate_ptr,
    up_ptr,
    row_in,
    first_column,
    columns,
    hidden,
    x_column_stride,
    gate_row_stride,
    gate_column_stride,
    up_row_stride,
    up_column_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    INTERPRETED: tl.constexpr,
):
    """x times both weight blocks as one product per K step: the block's first BLOCK_N
    columns are the gate's rows, the next BLOCK_N the up projection's, so the tensor cores see
    one product twice as wide (more reuse of x's block per instruction); the accumulator is
    split into the two after the last step."""
    inner = tl.arange(0, BLOCK_K)
    pair = tl.arange(0, 2 * BLOCK_N)
    from_up = pair >= BLOCK_N
    column = first_column + pair % BLOCK_N
    column_in = column < columns
    gate_rows = gate_ptr + column[None, :] * gate_row_stride + inner[:, None] * gate_column_stride
    up_rows = up_ptr + column[None, :] * up_row_stride + inner[:, None] * up_column_stride
    weight_block = tl.where(from_up[None, :], up_rows, gate_rows)
    weight_step = BLOCK_K * tl.where(from_up, up_column_stride, gate_column_stride)
    both = tl.zeros((BLOCK_M, 2 * BLOCK_N), dtype=tl.float32)
    for start in range(0, hidden, BLOCK_K):
        if EVEN_K:
            x = tl.load(x_block, mask=row_in[:, None], other=0.0)
            weight = tl.load(weight_block, mask=column_in[None, :], other=0.0)
        else:
            inner_in = inner < hidden - start
            x = tl.load(x_block, mask=row_in[:, None] & inner_in[None, :], other=0.0)
            weight = tl.load(weight_block, mask=inner_in[:, None] & column_in[None, :], other=0.0)
        if INTERPRETED:  # the interpreter's BF16 dot is wrong; BF16 products are exact in FP32
            both = tl.dot(x.to(tl.float32), weight.to(tl.float32), both, input_precision="ieee")
        else:
            both = tl.dot(x, weight, both)
        x_block += BLOCK_K * x_column_stride
        weight_block += weight_step[None, :]
    # (rows, [gate | up] columns) -> (rows, columns, [gate, up]) -> the two accumulators
    gate, up = tl.split(tl.permute(tl.reshape(both, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
    return gate, up


@triton.jit
def _gated_gelu_projection_kernel(
    x_ptr,
    gate_ptr,
    up_ptr,
    out_ptr,
    rows,
    columns,
    hidden,
    x_row_stride,
    x_column_stride,
    gate_row_stride,
    gate_column_stride,
    up_row_stride,
    up_column_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP: tl.constexpr,
    EVEN_K: tl.constexpr,
    JOINED: tl.constexpr,
    INTERPRETED: tl.constexpr,
):
    # Program order: GROUP row blocks sweep one band of weight columns before the next band.
    program = tl.program_id(0)
    row_blocks = tl.cdiv(rows, BLOCK_M)
    column_blocks = tl.cdiv(columns, BLOCK_N)
    per_group = GROUP * column_blocks
    first_row_block = (program // per_group) * GROUP
    group_rows = tl.minimum(row_blocks - first_row_block, GROUP)
    row_block = first_row_block + (program % per_group) % group_rows
    column_block = (program % per_group) // group_rows

    row = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    column = column_block * BLOCK_N + tl.arange(0, BLOCK_N)
    inner = tl.arange(0, BLOCK_K)
    row_in = row < rows
    column_in = column < columns
    x_block = x_ptr + row[:, None] * x_row_stride + inner[None, :] * x_column_stride
    # Weights are (columns, hidden); each is read as a (BLOCK_K, BLOCK_N) block of its transpose.
    if JOINED:
        gate, up = _joined_products(
            x_block,
            gate_ptr,
            up_ptr,
            row_in,
            column_block * BLOCK_N,
            columns,
            hidden,
            x_column_stride,
            gate_row_stride,
            gate_column_stride,
            up_row_stride,
            up_column_stride,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            EVEN_K,
            INTERPRETED,
        )
    else:
        gate, up = _paired_products(
            x_block,
            gate_ptr + column[None, :] * gate_row_stride + inner[:, None] * gate_column_stride,
            up_ptr + column[None, :] * up_row_stride + inner[:, None] * up_column_stride,
            row_in,
            column_in,
            hidden,
            x_column_stride,
            gate_column_stride,
            up_column_stride,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            EVEN_K,
            INTERPRETED,
        )

    # The up projection is rounded to BF16 as the reference rounds it (linear in the output,
    # so both agree but for rare ties); the gate stays FP32 into the GELU, whose left tail
    # would amplify a rounding flip. 0.5 (1 + tanh(z)) == sigmoid(2z); the clamp keeps exp
    # finite where the activation is zero to within BF16 anyway.
    up = round_to_bfloat16(up)
    z = SQRT_2_OVER_PI * (gate + 0.044715 * gate * gate * gate)
    activated = gate / (1.0 + tl.exp(tl.minimum(-2.0 * z, 80.0)))
    out = round_to_bfloat16(activated * up)
    out_block = out_ptr + row[:, None] * columns + column[None, :]
    tl.store(out_block, out, mask=row_in[:, None] & column_in[None, :])


def launch_settings(tokens: int, hidden: int, columns: int) -> dict[str, int]:
    """Tiles for this call: the GPU table by token count, or few large blocks interpreted."""
    if triton_runtime.interpreting():  # the interpreter pays per program, not per element
        return {
            "block_m": min(128, max(16, triton.next_power_of_2(tokens))),
            "block_n": min(512, max(16, triton.next_power_of_2(columns))),
            "block_k": min(256, max(16, triton.next_power_of_2(hidden))),
            "num_warps": 4,
            "num_stages": 1,
        }
    return TUNING[regime(tokens)]


def regime(tokens: int) -> str:
    """The TUNING entry for a call of this many tokens."""
    fitting = [name for name, most in REGIME_MAX_TOKENS.items() if tokens <= most]
    return fitting[0] if fitting else "gemm"


def launch_fused(
    x: torch.Tensor, gate_weight: torch.Tensor, up_weight: torch.Tensor, settings: dict[str, int]
) -> torch.Tensor:
    """One launch of the fused kernel with the given tiles, warps and stages."""
    tokens, hidden = x.shape
    columns = gate_weight.shape[0]
    out = torch.empty((tokens, columns), dtype=x.dtype, device=x.device)
    if out.numel():
        block_m, block_n, block_k = (settings[k] for k in ("block_m", "block_n", "block_k"))
        grid = (triton.cdiv(tokens, block_m) * triton.cdiv(columns, block_n),)
        launch(
            _gated_gelu_projection_kernel,
            grid,
            x,
            gate_weight,
            up_weight,
            out,
            tokens,
            columns,
            hidden,
            x.stride(0),
            x.stride(1),
            gate_weight.stride(0),
            gate_weight.stride(1),
            up_weight.stride(0),
            up_weight.stride(1),
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_K=block_k,
            GROUP=GROUP_M,
            EVEN_K=hidden % block_k == 0,
            JOINED=bool(settings.get("joined", 0)),
            INTERPRETED=triton_runtime.interpreting(),
            num_warps=settings["num_warps"],
            num_stages=settings["num_stages"],
        )
    return out


@compiler_visible
def gated_gelu_projection_kernel(
    x: torch.Tensor, gate_weight: torch.Tensor, up_weight: torch.Tensor
) -> torch.Tensor:
    """Fused: one GEMM-shaped kernel reads each x block once, multiplies it by both weights
    into two FP32 accumulators and writes only gelu_tanh(gate) * up."""
    settings = launch_settings(x.shape[0], x.shape[1], gate_weight.shape[0])
    return launch_fused(x, gate_weight, up_weight, settings)
