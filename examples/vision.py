"""The small vision MLP that turns image patches into prefix tokens.

Its projections are plain `F.linear` calls and its two activations are plain
`F.gelu(x, approximate="tanh")` calls, one in `VisionBlock.forward` and one in
`VisionProjector.forward`: deliberately not routed through the registry, so a registration
run has real call sites to route.
"""

import torch
import torch.nn.functional as F
from torch import nn

from examples.config import ExampleSize
from examples.layers import WeightFactory


class VisionBlock(nn.Module):
    """A residual MLP over patch features: x + fc2(gelu_tanh(fc1(x)))."""

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        self.fc1_weight = weights.matrix(size.vision_mlp_width, size.vision_width)
        self.fc1_bias = weights.vector(size.vision_mlp_width, spread=0.1)
        self.fc2_weight = weights.matrix(size.vision_width, size.vision_mlp_width, gain=0.5)
        self.fc2_bias = weights.vector(size.vision_width, spread=0.1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        inner = F.linear(features, self.fc1_weight, self.fc1_bias)
        inner = F.gelu(inner, approximate="tanh")
        return features + F.linear(inner, self.fc2_weight, self.fc2_bias)


class VisionProjector(nn.Module):
    """Maps vision features to the model width: fc2(gelu_tanh(fc1(x)))."""

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        self.fc1_weight = weights.matrix(size.width, size.vision_width)
        self.fc1_bias = weights.vector(size.width, spread=0.1)
        self.fc2_weight = weights.matrix(size.width, size.width)
        self.fc2_bias = weights.vector(size.width, spread=0.1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = F.linear(features, self.fc1_weight, self.fc1_bias)
        hidden = F.gelu(hidden, approximate="tanh")
        return F.linear(hidden, self.fc2_weight, self.fc2_bias)


class VisionTower(nn.Module):
    """Patch embedding, one vision block and the projector: patches in, prefix tokens out."""

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        self.patch_weight = weights.matrix(size.vision_width, size.patch_dim)
        self.block = VisionBlock(size, weights)
        self.projector = VisionProjector(size, weights)

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        """patches (batch, image_tokens, patch_dim) -> (batch, image_tokens, width)."""
        return self.projector(self.block(F.linear(patches, self.patch_weight)))
