"""The action expert MLP's down projection with the gated residual after it.

The expert's MLP ends in a down projection (its activated rows times the down weight), and the
layer then adds that update to the residual, scaled by the step's gate. The model's eager code
runs these as two launches and writes the (rows, width) update to memory between them; one
kernel can apply the gate and the residual in its product's epilogue. The reference is the
model's eager code (the product, then the gated residual, each op rounding its own result in
BF16); the production implementation is the code the model ran before (the BLAS product, then
the gated-residual kernel), so registering changes no output. A tuned kernel replaces it.
"""

import torch
import torch.nn.functional as F

from operators.catalog.gated_residual import gated_residual_triton
from operators.catalog.shapes import BATCHES, PI05
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload
from operators.kernel_launch import compiler_visible


def gated_down_projection_reference(
    residual: torch.Tensor, activated: torch.Tensor, weight: torch.Tensor, gate: torch.Tensor
) -> torch.Tensor:
    """residual + (activated W^T) * gate, the rows of `activated` being residual's (batch,
    tokens) in order; eager ops, each rounding its own result."""
    batch, tokens, _ = residual.shape
    update = F.linear(activated, weight).view(batch, tokens, -1)
    return residual + update * gate[:, None, :]


@compiler_visible
def gated_down_projection_kernel(
    residual: torch.Tensor, activated: torch.Tensor, weight: torch.Tensor, gate: torch.Tensor
) -> torch.Tensor:
    """Production: what the model ran before, one BLAS product and the gated-residual kernel
    (the name a tuned solution's entry point keeps)."""
    batch, tokens, _ = residual.shape
    update = F.linear(activated, weight).view(batch, tokens, -1)
    return gated_residual_triton(residual, update, gate)


DECLARATION = OperatorDeclaration(
    name="gated_down_projection",
    summary="The MLP's down projection added to the residual, scaled by the step's gate.",
    axes=(
        Axis(name="batch", kind="var"),
        Axis(name="tokens", kind="var", description="action tokens per batch row"),
        Axis(
            name="rows",
            kind="var",
            product_of=("batch", "tokens"),
            description="the rows of `activated`: residual's tokens, batch-major",
        ),
        Axis(name="hidden", kind="const", value=PI05.width),
        Axis(name="mlp", kind="const", value=PI05.mlp_width),
    ),
    inputs=(
        TensorSpec(name="residual", shape=("batch", "tokens", "hidden")),
        # a 4096-term product of N(0, 1) values already spreads to about 64, so `large` grows
        # neither operand of the product (as for the MLP's first half)
        TensorSpec(name="activated", shape=("rows", "mlp"), large_scale=1.0),
        TensorSpec(name="weight", shape=("hidden", "mlp"), large_scale=1.0),
        TensorSpec(name="gate", shape=("batch", "hidden"), description="broadcast over tokens"),
    ),
    outputs=(TensorSpec(name="out", shape=("batch", "tokens", "hidden")),),
    constraints=("the weight is (hidden, mlp), as nn.Linear stores it",),
    reference=gated_down_projection_reference,
    preferred=gated_down_projection_kernel,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="a fused kernel sums the product in FP32 in another order than the BLAS "
        "library and may scale it by the gate before rounding, so an output can land one "
        "step (up to 2^-7 relative) away",
    ),
    workloads=tuple(
        Workload(
            name=f"action_b{batch}",
            axes={"batch": batch, "tokens": PI05.action_tokens, "rows": batch * PI05.action_tokens},
            calls_per_forward=PI05.calls_per_forward("action", 1),
        )
        for batch in BATCHES
    ),
)
