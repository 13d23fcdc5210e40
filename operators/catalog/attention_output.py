"""Attention's output projection, read straight from attention's head layout.

Attention returns (batch, heads, tokens, head_dim); the output projection wants one row of
heads * head_dim features per token. The model's eager code copies the heads into token
layout (`transpose(1, 2).reshape`) and then runs one BLAS product: a full write and read of
the attention output between two launches. One kernel can load each head's slice where
attention wrote it and go straight into the product. The reference is the model's eager code;
the production implementation is that same code (the copy, then the product), so registering
changes no output. A tuned kernel replaces it.
"""

import torch
import torch.nn.functional as F

from operators.catalog.shapes import PI05, sequence_workloads
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec


def merge_heads(attended: torch.Tensor) -> torch.Tensor:
    """(batch, heads, tokens, head_dim) -> (batch, tokens, heads * head_dim), a copy."""
    batch, _, tokens, _ = attended.shape
    return attended.transpose(1, 2).reshape(batch, tokens, -1)


def attention_output_reference(attended: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """merge(attended) W^T: the heads side by side per token, one eager matrix product."""
    return F.linear(merge_heads(attended), weight)


def attention_output_kernel(attended: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Production: what the model ran before, the copy into token layout and one BLAS
    product (the name a tuned solution's entry point keeps)."""
    return F.linear(merge_heads(attended), weight)


DECLARATION = OperatorDeclaration(
    name="attention_output",
    summary="Attention's output projection of its heads, from the head layout to tokens.",
    axes=(
        Axis(name="batch", kind="var"),
        Axis(name="tokens", kind="var"),
        Axis(name="query_heads", kind="const", value=PI05.query_heads),
        Axis(name="head_dim", kind="const", value=PI05.head_dim),
        Axis(name="merged", kind="const", value=PI05.query_heads * PI05.head_dim),
        Axis(name="width", kind="const", value=PI05.width),
    ),
    inputs=(
        TensorSpec(
            name="attended", shape=("batch", "query_heads", "tokens", "head_dim"), large_scale=4.0
        ),
        # `large` scales the attention output alone, and modestly: an output sums 2048
        # products that can cancel.
        TensorSpec(name="weight", shape=("width", "merged"), large_scale=1.0),
    ),
    outputs=(TensorSpec(name="out", shape=("batch", "tokens", "width")),),
    constraints=("every input is contiguous",),
    reference=attention_output_reference,
    preferred=attention_output_kernel,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="a kernel sums the products in FP32 in another order than the BLAS library, so "
        "the one BF16 rounding of an output can land one step (up to 2^-7 relative) away",
    ),
    workloads=sequence_workloads(),
)
