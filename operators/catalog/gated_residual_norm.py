"""The action expert's attention residual with the MLP's adaptive RMSNorm after it.

After attention, the expert layer adds the attention's update to the residual, scaled by the
step's gate, and the MLP then normalises that sum with its own scale and shift. The model's
eager code runs these as two launches and reads the (rows, width) sum back from memory; one
kernel can normalise each row while it still holds the sum. The reference is the model's
eager code (gated_residual's two BF16 roundings, then ada_rms_norm in FP32 rounded once); the
production implementation is the code the model ran before (the gated-residual kernel, then
the norm's), so registering changes no output. A tuned kernel replaces it.
"""

import torch

from operators.catalog.ada_rms_norm import ada_rms_norm_triton
from operators.catalog.gated_residual import gated_residual_triton
from operators.catalog.shapes import PI05, action_workloads
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec
from operators.kernel_launch import compiler_visible


def gated_residual_norm_reference(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(hidden, normed): hidden = residual + update * gate, each eager BF16 op rounding its
    own result; normed = hidden / sqrt(mean(hidden^2) + eps) * (1 + scale) + shift in float32,
    rounded once."""
    hidden = residual + update * gate[:, None, :]
    x32 = hidden.float()
    inverse_rms = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    modulated = x32 * inverse_rms * (1.0 + scale.float()[:, None, :]) + shift.float()[:, None, :]
    return hidden, modulated.to(hidden.dtype)


@compiler_visible
def gated_residual_norm_kernel(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Production: what the model ran before, the gated-residual kernel and then the norm's
    (the name a tuned solution's entry point keeps)."""
    hidden = gated_residual_triton(residual, update, gate)
    return hidden, ada_rms_norm_triton(hidden, scale, shift, eps)


DECLARATION = OperatorDeclaration(
    name="gated_residual_norm",
    summary="The residual plus the attention's update scaled by the step's gate, and that sum "
    "normalised by the MLP's adaptive RMSNorm (scale and shift per batch row).",
    axes=(
        Axis(name="batch", kind="var"),
        Axis(name="tokens", kind="var", description="action tokens per batch row"),
        Axis(name="hidden", kind="const", value=PI05.width),
    ),
    inputs=(
        TensorSpec(name="residual", shape=("batch", "tokens", "hidden")),
        TensorSpec(name="update", shape=("batch", "tokens", "hidden")),
        TensorSpec(name="gate", shape=("batch", "hidden"), description="broadcast over tokens"),
        TensorSpec(name="scale", shape=("batch", "hidden"), description="broadcast over tokens"),
        TensorSpec(name="shift", shape=("batch", "hidden"), description="broadcast over tokens"),
    ),
    outputs=(
        TensorSpec(name="hidden", shape=("batch", "tokens", "hidden")),
        TensorSpec(name="normed", shape=("batch", "tokens", "hidden")),
    ),
    params={"eps": 1e-6},
    constraints=("every input is contiguous in its last axis",),
    reference=gated_residual_norm_reference,
    preferred=gated_residual_norm_kernel,
    contract=Contract(
        mode="no_less_accurate",
        roundings=2,
        reason="the norm's row sum order and rsqrt approximation differ from eager, and a fused "
        "kernel may round the gated product and the sum once",
    ),
    workloads=action_workloads(per_layer=1),
)
