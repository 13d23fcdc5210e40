"""Rotary position embedding (rotate-half form) of the queries and keys, as eager BF16 does it.

Bit-exact: each product with the cos and sin tables is rounded to BF16, then their sum.
"""

import torch
import triton
import triton.language as tl

from operators import triton_runtime  # first: it selects the interpreter before any kernel
from operators.catalog.blocking import rows_per_program
from operators.catalog.rounding import round_to_bfloat16
from operators.catalog.shapes import PI05, sequence_workloads
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec
from operators.kernel_launch import compiler_visible, launch

TUNING = {"rows_per_program": 8, "num_warps": 4, "num_stages": 3}
"""Launch settings on a GPU: (batch, head, token) rows per program, warps, pipeline stages."""
TUNING_SPACE = {
    "rows_per_program": (1, 2, 4, 8, 16, 32),
    "num_warps": (1, 2, 4, 8),
}
"""What `autotune` may try (no loop to pipeline, so stages stay); the numerics never change."""


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) over the two halves of the last axis."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_qk_reference(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """x * cos + rotate_half(x) * sin for the queries and the keys, in eager BF16."""
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


@triton.jit
def _rotate_rows(
    x_ptr,
    out_ptr,
    cos_ptr,
    sin_ptr,
    first_row,
    rows,
    heads,
    tokens,
    head_dim,
    batch_stride,
    head_stride,
    token_stride,
    table_stride,
    ROWS: tl.constexpr,
    BLOCK_DIM: tl.constexpr,
):
    row = first_row + tl.arange(0, ROWS)
    token = row % tokens
    head = (row // tokens) % heads
    batch = row // (tokens * heads)
    columns = tl.arange(0, BLOCK_DIM)
    half = head_dim // 2
    partner = tl.where(columns < half, columns + half, columns - half)
    sign = tl.where(columns < half, -1.0, 1.0)
    mask = (row[:, None] < rows) & (columns[None, :] < head_dim)
    base = batch * batch_stride + head * head_stride + token * token_stride
    x = tl.load(x_ptr + base[:, None] + columns[None, :], mask=mask, other=0.0)
    rotated = tl.load(x_ptr + base[:, None] + partner[None, :], mask=mask, other=0.0)
    table = token[:, None] * table_stride + columns[None, :]
    cos = tl.load(cos_ptr + table, mask=mask, other=0.0).to(tl.float32)
    sin = tl.load(sin_ptr + table, mask=mask, other=0.0).to(tl.float32)
    with_cos = round_to_bfloat16(x.to(tl.float32) * cos)
    with_sin = round_to_bfloat16(rotated.to(tl.float32) * sign[None, :] * sin)
    out = round_to_bfloat16(with_cos + with_sin)
    tl.store(out_ptr + row[:, None] * head_dim + columns[None, :], out, mask=mask)


@triton.jit
def _rotate_qk_kernel(
    q_ptr,
    k_ptr,
    q_out_ptr,
    k_out_ptr,
    cos_ptr,
    sin_ptr,
    q_rows,
    k_rows,
    query_heads,
    kv_heads,
    tokens,
    head_dim,
    q_batch_stride,
    q_head_stride,
    q_token_stride,
    k_batch_stride,
    k_head_stride,
    k_token_stride,
    table_stride,
    q_programs,
    k_first_program,
    ROWS: tl.constexpr,
    BLOCK_DIM: tl.constexpr,
):
    # Programs [0, q_programs) rotate query rows and programs from k_first_program on rotate
    # key rows: disjoint ranges when compiled, overlapping under the interpreter.
    program = tl.program_id(0)
    if program < q_programs:
        _rotate_rows(
            q_ptr,
            q_out_ptr,
            cos_ptr,
            sin_ptr,
            program * ROWS,
            q_rows,
            query_heads,
            tokens,
            head_dim,
            q_batch_stride,
            q_head_stride,
            q_token_stride,
            table_stride,
            ROWS,
            BLOCK_DIM,
        )
    if program >= k_first_program:
        _rotate_rows(
            k_ptr,
            k_out_ptr,
            cos_ptr,
            sin_ptr,
            (program - k_first_program) * ROWS,
            k_rows,
            kv_heads,
            tokens,
            head_dim,
            k_batch_stride,
            k_head_stride,
            k_token_stride,
            table_stride,
            ROWS,
            BLOCK_DIM,
        )


@compiler_visible
def rotate_qk_triton(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Production kernel: one launch for both; a program rotates 8 (batch, head, token) rows."""
    batch, query_heads, tokens, head_dim = q.shape
    kv_heads = k.shape[1]
    q, k = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k))
    cos, sin = cos.contiguous(), sin.contiguous()
    q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    k_out = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    q_rows, k_rows = batch * query_heads * tokens, batch * kv_heads * tokens
    block_dim = triton.next_power_of_2(head_dim)
    rows_each = rows_per_program(max(q_rows, k_rows), block_dim, TUNING["rows_per_program"])
    q_programs, k_programs = triton.cdiv(q_rows, rows_each), triton.cdiv(k_rows, rows_each)
    # Interpreted, where each program instance costs the same, one program does both.
    k_first_program = 0 if triton_runtime.interpreting() else q_programs
    programs = max(q_programs, k_first_program + k_programs)
    if programs and head_dim:
        launch(
            _rotate_qk_kernel,
            (programs,),
            q,
            k,
            q_out,
            k_out,
            cos,
            sin,
            q_rows,
            k_rows,
            query_heads,
            kv_heads,
            tokens,
            head_dim,
            *q.stride()[:3],
            *k.stride()[:3],
            head_dim,
            q_programs,
            k_first_program,
            ROWS=rows_each,
            BLOCK_DIM=block_dim,
            num_warps=TUNING["num_warps"],
            num_stages=TUNING["num_stages"],
        )
    return q_out, k_out


DECLARATION = OperatorDeclaration(
    name="rotate_qk",
    summary="Rotate-half rotary embedding of queries and keys with shared cos/sin tables.",
    axes=(
        Axis(name="batch", kind="var"),
        Axis(name="query_heads", kind="const", value=PI05.query_heads),
        Axis(name="kv_heads", kind="const", value=PI05.kv_heads),
        Axis(name="tokens", kind="var"),
        Axis(name="head_dim", kind="const", value=PI05.head_dim),
    ),
    inputs=(
        TensorSpec(name="q", shape=("batch", "query_heads", "tokens", "head_dim")),
        TensorSpec(name="k", shape=("batch", "kv_heads", "tokens", "head_dim")),
        TensorSpec(name="cos", shape=("tokens", "head_dim"), init="angle_table"),
        TensorSpec(name="sin", shape=("tokens", "head_dim"), init="angle_table"),
    ),
    outputs=(
        TensorSpec(name="q_out", shape=("batch", "query_heads", "tokens", "head_dim")),
        TensorSpec(name="k_out", shape=("batch", "kv_heads", "tokens", "head_dim")),
    ),
    constraints=("q and k are contiguous in their last axis", "head_dim is even"),
    reference=rotate_qk_reference,
    preferred=rotate_qk_triton,
    contract=Contract(
        mode="bit_exact",
        reason="three BF16 roundings like eager: each product with cos/sin, then their sum",
    ),
    workloads=sequence_workloads(),
)
