"""Query, key and value projections of one input, split into attention heads.

Attention reads its input through three weights (queries, keys, values) and wants each result
as (batch, heads, tokens, head_dim). One kernel can read the input once per tile, stream the
three weights and write each head where attention reads it, instead of three products and
three copies into the head layout. The reference is the model's eager code; the production
implementation is that same code (three BLAS products, then the copies), so registering
changes no output. A tuned kernel replaces it.
"""

import torch
import torch.nn.functional as F

from operators.catalog.shapes import PI05, sequence_workloads
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec


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


def qkv_projection_kernel(
    x: torch.Tensor,
    wq: torch.Tensor,
    wk: torch.Tensor,
    wv: torch.Tensor,
    head_dim: float = PI05.head_dim,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Production: what the model ran before, one BLAS product and one copy per weight (the
    name a tuned solution's entry point keeps)."""
    return tuple(split_heads(F.linear(x, weight), int(head_dim)) for weight in (wq, wk, wv))


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
