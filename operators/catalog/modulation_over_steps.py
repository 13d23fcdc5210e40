"""One modulation for every denoise step: y_{s,j} = c_s W_j^T for ten conditions, three weights.

The action expert's time condition depends only on the step's time, never on the actions, so
every step's modulation can be computed before the steps run. Computed per step, each of the
ten steps streams the same three weights again; computed together, one kernel can read each
weight once for all ten conditions (one product over 10 x batch rows). The reference is the
thirty eager products in the model's order (step by step, scale, shift, gate); the production
implementation is the same products by the BLAS library, so registering changes no output.
"""

import torch
import torch.nn.functional as F

from operators.catalog.shapes import BATCHES, PI05
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload
from operators.kernel_launch import compiler_visible

STEPS = 10
"""The denoise steps whose conditions one call takes (the example's `denoise_steps`)."""
WEIGHTS = 3


def modulation_over_steps_reference(
    c0: torch.Tensor,
    c1: torch.Tensor,
    c2: torch.Tensor,
    c3: torch.Tensor,
    c4: torch.Tensor,
    c5: torch.Tensor,
    c6: torch.Tensor,
    c7: torch.Tensor,
    c8: torch.Tensor,
    c9: torch.Tensor,
    w0: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    """c_s W_j^T for each step's condition c_s (batch, features) and weight W_j (outputs,
    features), step-major, each an eager matrix product (in BF16: FP32 sums, one rounding)."""
    conditions = (c0, c1, c2, c3, c4, c5, c6, c7, c8, c9)
    return tuple(F.linear(condition, weight) for condition in conditions for weight in (w0, w1, w2))


@compiler_visible
def modulation_over_steps_kernel(
    c0: torch.Tensor,
    c1: torch.Tensor,
    c2: torch.Tensor,
    c3: torch.Tensor,
    c4: torch.Tensor,
    c5: torch.Tensor,
    c6: torch.Tensor,
    c7: torch.Tensor,
    c8: torch.Tensor,
    c9: torch.Tensor,
    w0: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    """Production: one BLAS product per step and weight, thirty launches, in the reference's
    order (the name a tuned solution's entry point keeps)."""
    conditions = (c0, c1, c2, c3, c4, c5, c6, c7, c8, c9)
    return tuple(F.linear(condition, weight) for condition in conditions for weight in (w0, w1, w2))


def _condition(step: int) -> TensorSpec:
    # drawn in [0, 1) as the condition is a SiLU output (as for stacked_projection), so the
    # large and cancellation draws act on the weights alone
    return TensorSpec(name=f"c{step}", shape=("batch", "features"), init="unit_interval")


def _weight(index: int) -> TensorSpec:
    return TensorSpec(name=f"w{index}", shape=("outputs", "features"), large_scale=4.0)


DECLARATION = OperatorDeclaration(
    name="modulation_over_steps",
    summary="One modulation's three projections of every denoise step's condition, "
    "y_sj = c_s W_j^T, computed before the steps run.",
    axes=(
        Axis(name="batch", kind="var", description="rows of each condition: the batch"),
        Axis(name="features", kind="const", value=PI05.width),
        Axis(name="outputs", kind="const", value=PI05.width),
    ),
    inputs=tuple(_condition(step) for step in range(STEPS))
    + tuple(_weight(index) for index in range(WEIGHTS)),
    outputs=tuple(
        TensorSpec(name=f"y{step}_{index}", shape=("batch", "outputs"))
        for step in range(STEPS)
        for index in range(WEIGHTS)
    ),
    reference=modulation_over_steps_reference,
    preferred=modulation_over_steps_kernel,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="a kernel sums the products in FP32 in another order than the BLAS library, so "
        "the one BF16 rounding of an output can land one step (up to 2^-7 relative) away",
    ),
    workloads=tuple(
        Workload(
            name=f"steps_b{batch}",
            axes={"batch": batch},
            calls_per_forward=2.0 * PI05.layers,  # two modulations a layer, once a forward
        )
        for batch in BATCHES
    ),
)
