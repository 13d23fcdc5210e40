"""Query, key and value projections of one input in head layout, the queries and keys rotated
(rotate-half rotary embedding), in one Triton kernel.

Rotate-half pairs column j of a head with column j + head_dim / 2 of the same head. A program
here owns a block of rows and a pair of column blocks, one in a head's first half and its
partner in the second, so it holds both sums of every pair when the product is done and
rotates them before anything is stored: the projections are never written, read back and
written again by a second launch. It rounds where the model does (the projection to BF16, each
rotation product, their sum), so its outputs differ from the model's only where the products'
FP32 sum order moves the projection's rounding by a step. The values are stored as projected.
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from operators import triton_runtime  # first: it selects the interpreter before any kernel
from operators.catalog.shapes import PI05, sequence_workloads
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec
from operators.kernel_launch import launch

TUNING = {
    "few_rows": {"block_m": 64, "block_n": 16, "block_k": 128, "num_warps": 4, "num_stages": 4},
    "some_rows": {"block_m": 64, "block_n": 32, "block_k": 64, "num_warps": 4, "num_stages": 4},
    "many_rows": {"block_m": 128, "block_n": 64, "block_k": 64, "num_warps": 8, "num_stages": 3},
}
"""Tiles per row regime on a GPU; `block_n` is the width of each of a program's two column
blocks, so a program covers 2 x block_n columns. Up to 64 rows (the action expert at batch 1)
the weights' bytes bound the time, so narrow blocks spread them over more programs; from 512
rows on (the prefix) the products do, so wide tiles reuse each load more."""
TUNING_SPACE = {
    "block_m": (32, 64, 128),
    "block_n": (16, 32, 64),
    "block_k": (64, 128),
    "num_warps": (4, 8),
    "num_stages": (3, 4),
}
"""What `autotune` and benchmarks/tile_sweep.py try in every regime."""
REGIMES = (("few_rows", 64), ("some_rows", 512), ("many_rows", None))
"""Row regimes by their largest row count (batch x tokens)."""
INTERPRETER_TILE = {"block_m": 64, "block_n": 64, "block_k": 128, "num_warps": 1, "num_stages": 1}


def split_heads(projected: torch.Tensor, head_dim: int) -> torch.Tensor:
    """(batch, tokens, heads * head_dim) -> (batch, heads, tokens, head_dim), contiguous."""
    batch, tokens, columns = projected.shape
    split = projected.view(batch, tokens, columns // head_dim, head_dim)
    return split.transpose(1, 2).contiguous()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) over the two halves of the last axis."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotary_qkv_projection_reference(
    x: torch.Tensor,
    wq: torch.Tensor,
    wk: torch.Tensor,
    wv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    head_dim: float = PI05.head_dim,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(rotated x Wq^T, rotated x Wk^T, x Wv^T) in head layout: each product split into heads,
    then x * cos + rotate_half(x) * sin of the queries and keys, as the model's eager code."""
    q, k, v = (split_heads(F.linear(x, weight), int(head_dim)) for weight in (wq, wk, wv))
    return tuple(t * cos + rotate_half(t) * sin for t in (q, k)) + (v,)


@triton.jit
def _nearest_bfloat16(x):
    """x (FP32) rounded to the nearest BF16 value, ties to even: what a GPU's conversion does,
    which the interpreter's (truncating) does not."""
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).to(tl.float32, bitcast=True)


@triton.jit
def _rotary_qkv_projection_kernel(
    x_ptr,
    wq_ptr,
    wk_ptr,
    wv_ptr,
    cos_ptr,
    sin_ptr,
    q_ptr,
    k_ptr,
    v_ptr,
    rows,
    tokens,
    features,
    query_columns,
    kv_columns,
    HEAD_DIM: tl.constexpr,
    UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pair = tl.program_id(1)
    # The first column (across the three weights) of this program's first-half block: a head
    # never straddles two weights, so neither block does.
    pairs_per_head = HEAD_DIM // 2 // BLOCK_N
    first_column = (pair // pairs_per_head) * HEAD_DIM + (pair % pairs_per_head) * BLOCK_N
    if first_column < query_columns:
        w_ptr, out_ptr, column, heads = wq_ptr, q_ptr, first_column, query_columns // HEAD_DIM
    elif first_column < query_columns + kv_columns:
        w_ptr, out_ptr = wk_ptr, k_ptr
        column, heads = first_column - query_columns, kv_columns // HEAD_DIM
    else:
        w_ptr, out_ptr = wv_ptr, v_ptr
        column, heads = first_column - query_columns - kv_columns, kv_columns // HEAD_DIM
    row = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    firsts = column + tl.arange(0, BLOCK_N)
    # the queries' and keys' columns are rotated, the values' stored as projected
    rotated = first_column + tl.arange(0, BLOCK_N) < query_columns + kv_columns
    seconds = firsts + HEAD_DIM // 2
    depth = tl.arange(0, BLOCK_K)
    row_mask = row < rows
    first_sums = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    second_sums = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, features, BLOCK_K):
        inside = start + depth < features
        x = tl.load(
            x_ptr + row[:, None] * features + start + depth[None, :],
            mask=row_mask[:, None] & inside[None, :],
            other=0.0,
        )
        w_first = tl.load(
            w_ptr + firsts[:, None] * features + start + depth[None, :],
            mask=inside[None, :],
            other=0.0,
        )
        w_second = tl.load(
            w_ptr + seconds[:, None] * features + start + depth[None, :],
            mask=inside[None, :],
            other=0.0,
        )
        if UPCAST:  # the interpreter's dot has no BF16
            x, w_first, w_second = x.to(tl.float32), w_first.to(tl.float32), w_second.to(tl.float32)
        first_sums = tl.dot(x, tl.trans(w_first), first_sums)
        second_sums = tl.dot(x, tl.trans(w_second), second_sums)
    batch, token = row // tokens, row % tokens
    within = firsts % HEAD_DIM
    # x * cos + rotate_half(x) * sin with rotate_half(x) = (-second, first), rounded where the
    # model rounds: the projection, each product and their sum. A value program reads no
    # table: cos 1 and sin 0 leave its rounded sums as they are.
    table = token[:, None] * HEAD_DIM + within[None, :]
    tabled = row_mask[:, None] & rotated[None, :]
    cos_first = tl.load(cos_ptr + table, mask=tabled, other=1.0).to(tl.float32)
    sin_first = tl.load(sin_ptr + table, mask=tabled, other=0.0).to(tl.float32)
    cos_second = tl.load(cos_ptr + table + HEAD_DIM // 2, mask=tabled, other=1.0).to(tl.float32)
    sin_second = tl.load(sin_ptr + table + HEAD_DIM // 2, mask=tabled, other=0.0).to(tl.float32)
    first = _nearest_bfloat16(first_sums)
    second = _nearest_bfloat16(second_sums)
    first_out = _nearest_bfloat16(first * cos_first) - _nearest_bfloat16(second * sin_first)
    second_out = _nearest_bfloat16(second * cos_second) + _nearest_bfloat16(first * sin_second)
    head = firsts // HEAD_DIM
    place = ((batch[:, None] * heads + head[None, :]) * tokens + token[:, None]) * HEAD_DIM
    element = out_ptr.dtype.element_ty
    first_place = out_ptr + place + within[None, :]
    tl.store(first_place, _nearest_bfloat16(first_out).to(element), mask=row_mask[:, None])
    second_place = first_place + HEAD_DIM // 2
    tl.store(second_place, _nearest_bfloat16(second_out).to(element), mask=row_mask[:, None])


def rotary_qkv_projection_kernel(
    x: torch.Tensor,
    wq: torch.Tensor,
    wk: torch.Tensor,
    wv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    head_dim: float = PI05.head_dim,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One launch for the three projections in head layout, queries and keys rotated."""
    head_dim = int(head_dim)
    batch, tokens, features = x.shape
    x, wq, wk, wv, cos, sin = (
        t if t.is_contiguous() else t.contiguous() for t in (x, wq, wk, wv, cos, sin)
    )
    outputs = tuple(
        torch.empty(
            (batch, weight.shape[0] // head_dim, tokens, head_dim), dtype=x.dtype, device=x.device
        )
        for weight in (wq, wk, wv)
    )
    rows = batch * tokens
    if rows == 0:
        return outputs
    tile = _tile(rows, head_dim)
    columns = wq.shape[0] + 2 * wk.shape[0]
    grid = (triton.cdiv(rows, tile["block_m"]), columns // (2 * tile["block_n"]))
    launch(
        _rotary_qkv_projection_kernel,
        grid,
        x,
        wq,
        wk,
        wv,
        cos,
        sin,
        *outputs,
        rows,
        tokens,
        features,
        wq.shape[0],
        wk.shape[0],
        HEAD_DIM=head_dim,
        UPCAST=triton_runtime.interpreting(),
        BLOCK_M=tile["block_m"],
        BLOCK_N=tile["block_n"],
        BLOCK_K=tile["block_k"],
        num_warps=tile["num_warps"],
        num_stages=tile["num_stages"],
    )
    return outputs


def _tile(rows: int, head_dim: int) -> dict[str, int]:
    """The regime's tile, its column blocks no wider than half a head (a pair per program)."""
    tile = dict(INTERPRETER_TILE if triton_runtime.interpreting() else TUNING[regime(rows)])
    tile["block_n"] = min(tile["block_n"], head_dim // 2)
    return tile


def regime(rows: int) -> str:
    """The row regime of a call with `rows` = batch x tokens."""
    return next(name for name, most in REGIMES if most is None or rows <= most)


def _weight(name: str, rows: str) -> TensorSpec:
    # `large` scales x alone, and modestly: an output sums 1024 products that can cancel.
    return TensorSpec(name=name, shape=(rows, "features"), large_scale=1.0)


DECLARATION = OperatorDeclaration(
    name="rotary_qkv_projection",
    summary="Query, key and value projections in head layout, queries and keys rotated.",
    axes=(
        Axis(name="batch", kind="var"),
        Axis(name="tokens", kind="var"),
        Axis(name="features", kind="const", value=PI05.width),
        Axis(name="query_heads", kind="const", value=PI05.query_heads),
        Axis(name="kv_heads", kind="const", value=PI05.kv_heads),
        Axis(name="head_dim", kind="const", value=PI05.head_dim),
        Axis(name="query_rows", kind="const", value=PI05.query_heads * PI05.head_dim),
        Axis(name="kv_rows", kind="const", value=PI05.kv_heads * PI05.head_dim),
    ),
    inputs=(
        TensorSpec(name="x", shape=("batch", "tokens", "features"), large_scale=4.0),
        _weight("wq", "query_rows"),
        _weight("wk", "kv_rows"),
        _weight("wv", "kv_rows"),
        TensorSpec(name="cos", shape=("tokens", "head_dim"), init="angle_table"),
        TensorSpec(name="sin", shape=("tokens", "head_dim"), init="angle_table"),
    ),
    outputs=(
        TensorSpec(name="q", shape=("batch", "query_heads", "tokens", "head_dim")),
        TensorSpec(name="k", shape=("batch", "kv_heads", "tokens", "head_dim")),
        TensorSpec(name="v", shape=("batch", "kv_heads", "tokens", "head_dim")),
    ),
    params={"head_dim": float(PI05.head_dim)},
    constraints=(
        "every input is contiguous",
        "weights have a multiple of head_dim rows",
        "head_dim is even",
    ),
    reference=rotary_qkv_projection_reference,
    preferred=rotary_qkv_projection_kernel,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="a fused kernel sums the products in FP32 in another order than the BLAS "
        "library, so the projection's BF16 rounding can land one step away before the "
        "rotation; one that rotates the FP32 sums and rounds once errs less than the model",
    ),
    workloads=sequence_workloads(),
)
