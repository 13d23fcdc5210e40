"""The action expert: predicts the flow-matching velocity of noisy actions at one time step.

Every norm is an adaptive RMSNorm whose scale and shift, and every residual's gate, come from
an embedding of the time step, as in pi0.5. The time steps are known before the steps run, so
their conditions and every layer's modulations are computed first (`StepConditioning`), each
modulation's weights read once for all steps; a step then takes its share.
"""

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from examples.config import ExampleSize
from examples.layers import GatedMlp, SelfAttention, WeightFactory
from examples.prefix_encoder import PrefixCache
from operators import ops

SHORTEST_PERIOD = 4e-3
LONGEST_PERIOD = 4.0


def angular_frequencies(width: int) -> torch.Tensor:
    """(width / 2,) float32 angular frequencies over geometric periods, made on the host once."""
    fraction = torch.linspace(0.0, 1.0, width // 2, dtype=torch.float64)
    period = SHORTEST_PERIOD * (LONGEST_PERIOD / SHORTEST_PERIOD) ** fraction
    return (2 * math.pi / period).to(torch.float32)


def sinusoidal_time(time: torch.Tensor, angular: torch.Tensor) -> torch.Tensor:
    """Sine/cosine features of time (batch,) at `angular` frequencies, (batch, width) float32."""
    angles = time.float()[:, None] * angular[None, :]
    return torch.cat((angles.sin(), angles.cos()), dim=-1)


class TimeEmbedding(nn.Module):
    """The small MLP that turns the time step into the condition every modulation reads.

    Its frequencies are a buffer, so the forward pass reads them where the model lives.
    """

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        self.register_buffer("angular", angular_frequencies(size.width), persistent=False)
        self.in_weight = weights.matrix(size.width, size.width)
        self.out_weight = weights.matrix(size.width, size.width)

    def forward(self, time: torch.Tensor) -> torch.Tensor:
        features = sinusoidal_time(time, self.angular).to(torch.bfloat16)
        hidden = F.silu(F.linear(features, self.in_weight))
        return F.silu(F.linear(hidden, self.out_weight))


class Modulation(nn.Module):
    """Scale, shift and gate (each (batch, width)) for one norm, projected from the condition.

    Given every denoise step's condition, it returns each step's scale, shift and gate from one
    registry call, so a kernel can read each weight once for all the steps.
    """

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        self.scale_weight = weights.matrix(size.width, size.width, gain=0.2)
        self.shift_weight = weights.matrix(size.width, size.width, gain=0.2)
        self.gate_weight = weights.matrix(size.width, size.width, gain=1.5)

    def forward(self, *conditions: torch.Tensor):
        """(scale, shift, gate) of one condition; of several, a list of them, one per step."""
        weights = (self.scale_weight, self.shift_weight, self.gate_weight)
        if len(conditions) == 1:
            return ops.stacked_projection(conditions[0], *weights)
        projections = ops.modulation_over_steps(*conditions, *weights)
        return [projections[start : start + 3] for start in range(0, len(projections), 3)]


class GatedResidualMlp(GatedMlp):
    """The expert's MLP ending in its layer's gated residual (same weights and names as
    `GatedMlp`): the down projection and the residual scaled by the step's gate are one
    registry call, so one kernel can apply both in the product's epilogue."""

    def forward(
        self, hidden: torch.Tensor, residual: torch.Tensor, step_gate: torch.Tensor
    ) -> torch.Tensor:
        """residual + down(gelu_tanh(gate(x)) * up(x)) * step_gate."""
        activated = self.activated(hidden)
        return ops.gated_down_projection(residual, activated, self.down_weight, step_gate)


class ExpertLayer(nn.Module):
    """A transformer layer over the action tokens, attending to the prefix cache as well."""

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        output_gain = (2 * size.expert_layers) ** -0.5
        self.attention_modulation = Modulation(size, weights)
        self.attention = SelfAttention(size, weights, output_gain)
        self.mlp_modulation = Modulation(size, weights)
        self.mlp = GatedResidualMlp(size, weights, output_gain)

    def forward(self, hidden, modulations, cos, sin, key_cache, value_cache):
        """`modulations`: this step's (scale, shift, gate) for attention, then for the MLP."""
        (scale, shift, gate), (mlp_scale, mlp_shift, mlp_gate) = modulations
        normed = ops.ada_rms_norm(hidden, scale, shift)
        attended, _, _ = self.attention(normed, cos, sin, key_cache, value_cache)
        # the attention's gated residual and the MLP's norm of it: one call, one kernel
        hidden, normed = ops.gated_residual_norm(hidden, attended, gate, mlp_scale, mlp_shift)
        return self.mlp(normed, hidden, mlp_gate)


class ActionExpert(nn.Module):
    """Noisy actions and a time step's conditioning in, the velocity towards clean actions out."""

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        self.action_in_weight = weights.matrix(size.width, size.action_dim)
        self.time_embedding = TimeEmbedding(size, weights)
        self.layers = nn.ModuleList(ExpertLayer(size, weights) for _ in range(size.expert_layers))
        self.final_scale_weight = weights.matrix(size.width, size.width, gain=0.2)
        self.final_shift_weight = weights.matrix(size.width, size.width, gain=0.2)
        self.action_out_weight = weights.matrix(size.action_dim, size.width)

    def forward(self, actions, step: "StepCondition", cache: PrefixCache, cos, sin) -> torch.Tensor:
        """actions (batch, action_tokens, action_dim) float32 and one step's conditioning ->
        velocity."""
        condition, modulations = step
        hidden = F.linear(actions.to(torch.bfloat16), self.action_in_weight)
        for layer, layer_modulations, key_cache, value_cache in zip(
            self.layers, modulations, cache.keys, cache.values, strict=True
        ):
            hidden = layer(hidden, layer_modulations, cos, sin, key_cache, value_cache)
        scale = F.linear(condition, self.final_scale_weight)
        shift = F.linear(condition, self.final_shift_weight)
        normed = ops.ada_rms_norm(hidden, scale, shift)
        return F.linear(normed, self.action_out_weight).float()


class StepCondition(NamedTuple):
    """One denoise step's condition (batch, width) and, per expert layer, its attention and MLP
    modulations (each a scale, shift and gate)."""

    condition: torch.Tensor
    modulations: list


class StepConditioning(nn.Module):
    """Every denoise step's conditioning, computed before the steps run: it depends only on the
    steps' times, so each modulation reads its weights once for all the steps.

    It owns no weights: it reads the action expert's, held as a plain reference rather than a
    submodule, so the model's parameters keep their names. `torch.compile` compiles it as its
    own region.
    """

    def __init__(self, expert: ActionExpert) -> None:
        super().__init__()
        self._expert = (expert,)

    def forward(self, times: list[torch.Tensor]) -> list[StepCondition]:
        """times: each step's (batch,) time -> each step's conditioning, in step order."""
        expert = self._expert[0]
        conditions = [expert.time_embedding(time) for time in times]
        per_layer = [
            (layer.attention_modulation(*conditions), layer.mlp_modulation(*conditions))
            for layer in expert.layers
        ]
        return [
            StepCondition(
                condition,
                [(attention[step], mlp[step]) for attention, mlp in per_layer],
            )
            for step, condition in enumerate(conditions)
        ]
