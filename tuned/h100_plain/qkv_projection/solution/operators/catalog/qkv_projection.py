"""Query, key and value projections of one input, split into attention heads.

Attention reads its input through three weights (queries, keys, values) and wants each result
as (batch, heads, tokens, head_dim). One kernel can read the input once per tile, stream the
three weights and write each head where attention reads it, instead of three products and
three copies into the head layout. The reference is the model's eager code; the production
implementation is that same code (three BLAS products, then the copies), so registering
changes no output. This solution replaces it with one Triton kernel: a program per (row
block, column block), the column block inside one weight, FP32 sums over the input's features,
each result stored straight into its head's place.
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ...operators import triton_runtime  # first: it selects the interpreter before any kernel
from ...operators.catalog.shapes import PI05, sequence_workloads
from ...operators.contract import Contract
from ...operators.declaration import Axis, OperatorDeclaration, TensorSpec
from ...operators.kernel_launch import launch

TUNING = {
    "few_rows": {"block_m": 64, "block_n": 32, "block_k": 128, "num_warps": 4, "num_stages": 4},
    "some_rows": {"block_m": 64, "block_n": 64, "block_k": 64, "num_warps": 4, "num_stages": 4},
    "many_rows": {"block_m": 128, "block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 3},
}
"""Tiles per row regime on a GPU: up to 64 rows (the action expert at batch 1) the weights'
bytes bound the time, so narrow column blocks spread them over more programs; from 512 rows
on (the prefix) the products do, so wide tiles reuse each load more."""
TUNING_SPACE = {
    "block_m": (32, 64, 128),
    "block_n": (32, 64, 128),
    "block_k": (64, 128),
    "num_warps": (4, 8),
    "num_stages": (3, 4),
}
"""What benchmarks/tile_sweep.py tries in every regime."""
REGIMES = (("few_rows", 64), ("some_rows", 512), ("many_rows", None))
"""Row regimes by their largest row count (batch x tokens)."""
INTERPRETER_TILE = {"block_m": 128, "block_n": 128, "block_k": 256, "num_warps": 1, "num_stages": 1}


def split_heads(projected: torch.Tensor, head_dim: int) -> torch.Tensor:
    """(batch, tokens, heads * head_dim) -> (batch, heads, tokens, head_dim), contiguous."""
    batch, tokens, columns = projected.shape
    split = projected.view(batch, tokens, columns // head_dim, head_dim)
    return split.transpose(1, 2).contiguous()


def qkv_projection_reference(
    x: torch.Tensor,
    wq: torch.Tensor,
    wk: torch.Tensor,
    wv: torch.Tensor,
    head_dim: float = PI05.head_dim,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x Wq^T, x Wk^T, x Wv^T), each an eager matrix product split into heads."""
    return tuple(split_heads(F.linear(x, weight), int(head_dim)) for weight in (wq, wk, wv))


@triton.jit
def _nearest_bfloat16(x):
    """x (FP32) rounded to the nearest BF16 value, ties to even: what a GPU's conversion does,
    which the interpreter's (truncating) does not."""
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).to(tl.float32, bitcast=True)


@triton.jit
def _qkv_projection_kernel(
    x_ptr,
    wq_ptr,
    wk_ptr,
    wv_ptr,
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
    first_column = tl.program_id(1) * BLOCK_N
    if first_column < query_columns:  # a column block never straddles two weights
        w_ptr, out_ptr, column, heads = wq_ptr, q_ptr, first_column, query_columns // HEAD_DIM
    elif first_column < query_columns + kv_columns:
        w_ptr, out_ptr = wk_ptr, k_ptr
        column, heads = first_column - query_columns, kv_columns // HEAD_DIM
    else:
        w_ptr, out_ptr = wv_ptr, v_ptr
        column, heads = first_column - query_columns - kv_columns, kv_columns // HEAD_DIM
    row = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    columns = column + tl.arange(0, BLOCK_N)
    depth = tl.arange(0, BLOCK_K)
    row_mask = row < rows
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, features, BLOCK_K):
        inside = start + depth < features
        x = tl.load(
            x_ptr + row[:, None] * features + start + depth[None, :],
            mask=row_mask[:, None] & inside[None, :],
            other=0.0,
        )
        w = tl.load(
            w_ptr + columns[:, None] * features + start + depth[None, :],
            mask=inside[None, :],
            other=0.0,
        )
        if UPCAST:  # the interpreter's dot has no BF16
            x, w = x.to(tl.float32), w.to(tl.float32)
        acc = tl.dot(x, tl.trans(w), acc)
    batch, token = row // tokens, row % tokens
    head, within = columns // HEAD_DIM, columns % HEAD_DIM
    place = (batch[:, None] * heads + head[None, :]) * tokens + token[:, None]
    out = _nearest_bfloat16(acc).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + place * HEAD_DIM + within[None, :], out, mask=row_mask[:, None])


def qkv_projection_kernel(
    x: torch.Tensor,
    wq: torch.Tensor,
    wk: torch.Tensor,
    wv: torch.Tensor,
    head_dim: float = PI05.head_dim,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One launch for the three projections, each written in its head layout."""
    head_dim = int(head_dim)
    batch, tokens, features = x.shape
    x, wq, wk, wv = (t if t.is_contiguous() else t.contiguous() for t in (x, wq, wk, wv))
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
    grid = (triton.cdiv(rows, tile["block_m"]), columns // tile["block_n"])
    launch(
        _qkv_projection_kernel,
        grid,
        x,
        wq,
        wk,
        wv,
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
    tile = dict(INTERPRETER_TILE if triton_runtime.interpreting() else TUNING[regime(rows)])
    tile["block_n"] = min(tile["block_n"], head_dim)
    return tile


def regime(rows: int) -> str:
    """The row regime of a call with `rows` = batch x tokens."""
    return next(name for name, most in REGIMES if most is None or rows <= most)


def _weight(name: str, rows: str) -> TensorSpec:
    # `large` scales x alone, and modestly: an output sums 1024 products that can cancel.
    return TensorSpec(name=name, shape=(rows, "features"), large_scale=1.0)


DECLARATION = OperatorDeclaration(
    name="qkv_projection",
    summary="Query, key and value projections of one input, each split into attention heads.",
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
    ),
    outputs=(
        TensorSpec(name="q", shape=("batch", "query_heads", "tokens", "head_dim")),
        TensorSpec(name="k", shape=("batch", "kv_heads", "tokens", "head_dim")),
        TensorSpec(name="v", shape=("batch", "kv_heads", "tokens", "head_dim")),
    ),
    params={"head_dim": float(PI05.head_dim)},
    constraints=("every input is contiguous", "weights have a multiple of head_dim rows"),
    reference=qkv_projection_reference,
    preferred=qkv_projection_kernel,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="a kernel sums the products in FP32 in another order than the BLAS library, so "
        "the one BF16 rounding of an output can land one step (up to 2^-7 relative) away",
    ),
    workloads=sequence_workloads(),
)
