"""rotate_qk with each row's two halves as two contiguous, unmasked blocks.

The operator file the scripted tune session ships (`python kernels/solution_session.py
rotate_qk kernels/rotate_qk_halves.py` writes it into `kernels/sessions/tune_rotate_qk.json`
with its imports made relative). Rotate-half reads x1 and x2 (the row's first and second half)
and writes x1 cos - x2 sin and x2 cos + x1 sin, so a program loads each half once as a plain
block: no gather by a partner index. The half width is a compile-time constant and, at a
power-of-two head dimension, no column is masked, so every load and store of a row is a run of
16-byte vector accesses; the production kernel's mask compares with a run-time half, which
keeps the compiler from proving that and leaves it 2-byte accesses. The operator is
memory-bound (at prefix_b8 it moves 42 MB), so the access width is what sets its time.

Bit-exact like the production kernel: each product with the cos and sin tables rounded to
BF16, then their sum, as eager BF16 does.
"""

import torch
import triton
import triton.language as tl

from operators import triton_runtime  # first: it selects the interpreter before any kernel
from operators.catalog.blocking import rows_per_program
from operators.catalog.rounding import round_to_bfloat16
from operators.kernel_launch import compiler_visible, launch

TUNING = {
    "few_rows": {"rows_per_program": 4, "num_warps": 4, "num_stages": 1},
    "some_rows": {"rows_per_program": 4, "num_warps": 4, "num_stages": 1},
    "many_rows": {"rows_per_program": 16, "num_warps": 2, "num_stages": 1},
}
"""Launch settings per row regime on a GPU: (batch, head, token) rows per program, warps,
pipeline stages (`benchmarks/tile_sweep.py rotate_qk --write` puts each regime's fastest here)."""
TUNING_SPACE = {
    "rows_per_program": (4, 8, 16, 32, 64),
    "num_warps": (1, 2, 4, 8),
    "num_stages": (1,),
}
"""What the sweep tries in every regime (no loop to pipeline, so stages stay); the numerics
never change."""
REGIMES = (("few_rows", 64), ("some_rows", 1024), ("many_rows", None))
"""Row regimes by their largest batch x tokens: the action expert at batch 1, the action expert
at batch 8 and the prefix at batch 1, the prefix at batch 8 (eight times the bytes)."""


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
    batch_stride,
    head_stride,
    token_stride,
    table_stride,
    ROWS: tl.constexpr,
    HALF: tl.constexpr,
    BLOCK_HALF: tl.constexpr,
):
    row = first_row + tl.arange(0, ROWS)
    token = row % tokens
    head = (row // tokens) % heads
    batch = row // (tokens * heads)
    columns = tl.arange(0, BLOCK_HALF)
    if BLOCK_HALF == HALF:  # the mask is constant along a row: vector accesses stay possible
        mask = (row < rows)[:, None]
    else:
        mask = (row < rows)[:, None] & (columns < HALF)[None, :]
    base = batch * batch_stride + head * head_stride + token * token_stride
    first = x_ptr + base[:, None] + columns[None, :]
    x1 = tl.load(first, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(first + HALF, mask=mask, other=0.0).to(tl.float32)
    table = token[:, None] * table_stride + columns[None, :]
    cos1 = tl.load(cos_ptr + table, mask=mask, other=0.0).to(tl.float32)
    cos2 = tl.load(cos_ptr + table + HALF, mask=mask, other=0.0).to(tl.float32)
    sin1 = tl.load(sin_ptr + table, mask=mask, other=0.0).to(tl.float32)
    sin2 = tl.load(sin_ptr + table + HALF, mask=mask, other=0.0).to(tl.float32)
    # rotate_half(x) = (-x2, x1); each product rounded to BF16, then their sum, as eager does.
    out1 = round_to_bfloat16(round_to_bfloat16(x1 * cos1) + round_to_bfloat16(-x2 * sin1))
    out2 = round_to_bfloat16(round_to_bfloat16(x2 * cos2) + round_to_bfloat16(x1 * sin2))
    target = out_ptr + row[:, None] * (2 * HALF) + columns[None, :]
    tl.store(target, out1.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(target + HALF, out2.to(out_ptr.dtype.element_ty), mask=mask)


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
    HALF: tl.constexpr,
    BLOCK_HALF: tl.constexpr,
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
            q_batch_stride,
            q_head_stride,
            q_token_stride,
            table_stride,
            ROWS,
            HALF,
            BLOCK_HALF,
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
            k_batch_stride,
            k_head_stride,
            k_token_stride,
            table_stride,
            ROWS,
            HALF,
            BLOCK_HALF,
        )


@compiler_visible
def rotate_qk_triton(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One launch for both; a program rotates its regime's rows, each as two contiguous halves."""
    batch, query_heads, tokens, head_dim = q.shape
    kv_heads = k.shape[1]
    q, k = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k))
    cos, sin = cos.contiguous(), sin.contiguous()
    q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    k_out = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    q_rows, k_rows = batch * query_heads * tokens, batch * kv_heads * tokens
    half = head_dim // 2
    block_half = triton.next_power_of_2(half)
    settings = TUNING[regime(batch * tokens)]
    rows_each = rows_per_program(max(q_rows, k_rows), head_dim, settings["rows_per_program"])
    q_programs, k_programs = triton.cdiv(q_rows, rows_each), triton.cdiv(k_rows, rows_each)
    # Interpreted, where each program instance costs the same, one program does both.
    k_first_program = 0 if triton_runtime.interpreting() else q_programs
    programs = max(q_programs, k_first_program + k_programs)
    if programs and half:
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
            *q.stride()[:3],
            *k.stride()[:3],
            head_dim,
            q_programs,
            k_first_program,
            ROWS=rows_each,
            HALF=half,
            BLOCK_HALF=block_half,
            num_warps=settings["num_warps"],
            num_stages=settings["num_stages"],
        )
    return q_out, k_out


def regime(rows: int) -> str:
    """The row regime of a call with `rows` = batch x tokens."""
    return next(name for name, most in REGIMES if most is None or rows <= most)
