"""The whole pi0.5-shaped model: vision, prefix encoder, then 10 flow-matching denoise steps."""

from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from examples.action_expert import ActionExpert, StepConditioning
from examples.checkpoint import load_checkpoint
from examples.config import ExampleSize
from examples.layers import WeightFactory, rope_tables
from examples.prefix_encoder import PrefixCache, PrefixEncoder
from examples.vision import VisionTower

INPUT_SEED_OFFSET = 1_000_003


class ExampleInputs(NamedTuple):
    """One batch: image patches, prompt token ids and the initial action noise."""

    patches: torch.Tensor
    token_ids: torch.Tensor
    noise: torch.Tensor


class ExampleModel(nn.Module):
    """Random weights drawn from a seed; the forward pass returns named output tensors."""

    def __init__(self, size: ExampleSize, seed: int) -> None:
        super().__init__()
        self.size = size
        weights = WeightFactory(seed)
        self.vision = VisionTower(size, weights)
        self.prefix_encoder = PrefixEncoder(size, weights)
        self.action_expert = ActionExpert(size, weights)
        self.step_conditioning = StepConditioning(self.action_expert)
        cos, sin = rope_tables(size.prefix_tokens, size.action_tokens, size.head_dim)
        self.register_buffer("action_rope_cos", cos, persistent=False)
        self.register_buffer("action_rope_sin", sin, persistent=False)

    @torch.no_grad()
    def forward(self, inputs: ExampleInputs) -> dict[str, torch.Tensor]:
        vision_features = self.vision(inputs.patches)
        cache = self.prefix_encoder(vision_features, inputs.token_ids)
        actions, first_velocity = self.sample_actions(inputs.noise, cache)
        return {
            "actions": actions,
            "first_velocity": first_velocity,
            "prefix_keys": torch.stack(cache.keys),
            "prefix_values": torch.stack(cache.values),
            "vision_features": vision_features,
        }

    def step_times(self, noise: torch.Tensor) -> list[torch.Tensor]:
        """Each denoise step's time, (batch,) float32, from 1 down by 1 / denoise_steps."""
        step = -1.0 / self.size.denoise_steps
        return [
            torch.full((noise.shape[0],), 1.0 + index * step, device=noise.device)
            for index in range(self.size.denoise_steps)
        ]

    def sample_actions(self, noise: torch.Tensor, cache: PrefixCache):
        """Euler steps of the flow from noise (time 1) to actions (time 0), in float32.

        Returns the actions and the first step's velocity, which no step size scales down.
        """
        size = self.size
        cos, sin = self.action_rope_cos, self.action_rope_sin
        step = -1.0 / size.denoise_steps
        actions, first_velocity = noise, None
        for conditioning in self.step_conditioning(self.step_times(noise)):
            velocity = self.action_expert(actions, conditioning, cache, cos, sin)
            first_velocity = velocity if first_velocity is None else first_velocity
            actions = actions + step * velocity
        return actions, first_velocity


def build_model(
    size: ExampleSize,
    seed: int,
    device: torch.device | str,
    checkpoint: list[Path] | None = None,
) -> ExampleModel:
    """The model for one size and seed, its weights drawn on the CPU so every device agrees;
    with `checkpoint` (safetensors files), its weights are loaded from those instead."""
    model = ExampleModel(size, seed)
    if checkpoint:
        load_checkpoint(model, checkpoint)
    return model.to(device).eval()


def make_inputs(
    size: ExampleSize, batch: int, seed: int, device: torch.device | str
) -> ExampleInputs:
    """Fixed inputs for one batch size and seed, drawn on the CPU."""
    generator = torch.Generator().manual_seed(seed + INPUT_SEED_OFFSET)
    patches = torch.randn(batch, size.image_tokens, size.patch_dim, generator=generator)
    token_ids = torch.randint(0, size.vocabulary, (batch, size.text_tokens), generator=generator)
    noise = torch.randn(batch, size.action_tokens, size.action_dim, generator=generator)
    return ExampleInputs(
        patches=patches.to(torch.bfloat16).to(device),
        token_ids=token_ids.to(device),
        noise=noise.to(device),
    )


def run_example(
    size: ExampleSize, batch: int, seed: int, device: torch.device | str
) -> dict[str, torch.Tensor]:
    """Build the model and its inputs from `seed` and run one forward pass."""
    model = build_model(size, seed, device)
    return model(make_inputs(size, batch, seed, device))
