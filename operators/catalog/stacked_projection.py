"""Several projections of one input: y_i = x W_i^T for three weights of one shape.

The action expert's modulations project the time condition through three weights (scale,
shift, gate); one kernel can read the condition once and stream all three weights in one
launch. The reference is the three eager products, in the model's order; the production
implementation is what the model ran before the operator existed, the same three products by
the BLAS library, so registering changes no output. A tuned kernel replaces it.
"""

import torch
import torch.nn.functional as F

from operators.catalog.shapes import BATCHES, PI05
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload
from operators.kernel_launch import compiler_visible


def stacked_projection_reference(
    x: torch.Tensor, w0: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x W0^T, x W1^T, x W2^T), each an eager matrix product (in BF16: FP32 sums, one
    rounding), in that order."""
    return tuple(F.linear(x, weight) for weight in (w0, w1, w2))


@compiler_visible
def stacked_projection_kernel(
    x: torch.Tensor, w0: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Production: one BLAS product per weight, three launches (the name a tuned solution's
    entry point keeps)."""
    return F.linear(x, w0), F.linear(x, w1), F.linear(x, w2)


def _weight(name: str) -> TensorSpec:
    return TensorSpec(name=name, shape=("outputs", "features"), large_scale=4.0)


DECLARATION = OperatorDeclaration(
    name="stacked_projection",
    summary="Three projections of one input, y_i = x W_i^T, as in the action expert's modulation.",
    axes=(
        Axis(name="batch", kind="var", description="rows of x: the batch's time conditions"),
        Axis(name="features", kind="const", value=PI05.width),
        Axis(name="outputs", kind="const", value=PI05.width),
    ),
    inputs=(
        # x is drawn in [0, 1), as the condition is a SiLU output, so the large and
        # cancellation draws act on the weights alone: were both operands offset by 16, the
        # products (about 256) would give the BLAS's own FP32 sum an error near 3e-3 on
        # outputs that cancel to near zero, past atol, so no other sum order could keep
        # the contract (measured on a CPU; 1e-4 at most with these draws).
        TensorSpec(name="x", shape=("batch", "features"), init="unit_interval"),
        _weight("w0"),
        _weight("w1"),
        _weight("w2"),
    ),
    outputs=(
        TensorSpec(name="y0", shape=("batch", "outputs")),
        TensorSpec(name="y1", shape=("batch", "outputs")),
        TensorSpec(name="y2", shape=("batch", "outputs")),
    ),
    reference=stacked_projection_reference,
    preferred=stacked_projection_kernel,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="a kernel sums the products in FP32 in another order than the BLAS library, so "
        "the one BF16 rounding of an output can land one step (up to 2^-7 relative) away",
    ),
    workloads=tuple(
        Workload(
            name=f"condition_b{batch}",
            axes={"batch": batch},
            calls_per_forward=PI05.calls_per_forward("action", per_layer=2),
        )
        for batch in BATCHES
    ),
)
