"""Query, key and value projections of one input with the rotary embedding of the queries and
keys, each result in its attention-head layout.

Attention rotates the queries and keys right after projecting them, and rotate-half pairs a
head's column j with column j + head_dim / 2 of the same product. One kernel that computes both
columns of a pair can rotate them in its epilogue, before anything is stored, instead of
storing the projections, reading them back and storing them rotated. The reference is the
model's code: the three products split into heads (`qkv_projection`'s reference), then
`rotate_qk`'s reference. The production implementation is what the model ran before, the three
BLAS products and copies, then `rotate_qk`'s production kernel, so registering changes no
output. A tuned kernel replaces it.
"""

import torch
import torch.nn.functional as F

from operators.catalog.qkv_projection import qkv_projection_kernel
from operators.catalog.rotate_qk import rotate_qk_triton
from operators.catalog.shapes import PI05, sequence_workloads
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec


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


def rotary_qkv_projection_kernel(
    x: torch.Tensor,
    wq: torch.Tensor,
    wk: torch.Tensor,
    wv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    head_dim: float = PI05.head_dim,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Production: what the model ran before, `qkv_projection`'s production path, then
    `rotate_qk`'s (the name a tuned solution's entry point keeps)."""
    q, k, v = qkv_projection_kernel(x, wq, wk, wv, head_dim)
    q, k = rotate_qk_triton(q, k, cos, sin)
    return q, k, v


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
