"""The prefix encoder: image and prompt tokens in, the per-layer K/V cache out.

The action expert attends to this cache on every denoise step, so it is computed once per
forward pass.
"""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from examples.config import ExampleSize
from examples.layers import GatedMlp, SelfAttention, WeightFactory, empty_cache, rope_tables
from operators import ops


class PrefixCache(NamedTuple):
    """Rotated keys and values of every prefix layer, each (batch, kv_heads, prefix, head_dim)."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]


class PrefixLayer(nn.Module):
    """A pre-norm transformer layer whose attention sees every prefix token (no causal mask)."""

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        output_gain = (2 * size.prefix_layers) ** -0.5
        self.attention_norm_weight = weights.vector(size.width, mean=1.0, spread=0.1)
        self.attention = SelfAttention(size, weights, output_gain)
        self.mlp_norm_weight = weights.vector(size.width, mean=1.0, spread=0.1)
        self.mlp = GatedMlp(size, weights, output_gain)

    def forward(self, hidden, cos, sin, no_cache):
        """Returns the new hidden state and this layer's keys and values for the cache."""
        normed = ops.rms_norm(hidden, self.attention_norm_weight)
        attended, key, value = self.attention(normed, cos, sin, no_cache, no_cache)
        hidden = hidden + attended
        hidden = hidden + self.mlp(ops.rms_norm(hidden, self.mlp_norm_weight))
        return hidden, key, value


class PrefixEncoder(nn.Module):
    """Embeds the prompt, joins it to the image tokens and runs the prefix layers."""

    def __init__(self, size: ExampleSize, weights: WeightFactory) -> None:
        super().__init__()
        self.size = size
        self.token_embedding = weights.matrix(size.vocabulary, size.width, gain=size.width**0.5)
        self.layers = nn.ModuleList(PrefixLayer(size, weights) for _ in range(size.prefix_layers))
        cos, sin = rope_tables(0, size.prefix_tokens, size.head_dim)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, image_tokens: torch.Tensor, token_ids: torch.Tensor) -> PrefixCache:
        """image_tokens (batch, image_tokens, width), token_ids (batch, text_tokens)."""
        prompt = F.embedding(token_ids, self.token_embedding)
        hidden = torch.cat((image_tokens, prompt), dim=1)
        batch, tokens, _ = hidden.shape
        cos, sin = self.rope_cos, self.rope_sin
        no_cache = empty_cache(self.size, batch, hidden.device)
        cache = PrefixCache(keys=[], values=[])
        for layer in self.layers:
            hidden, key, value = layer(hidden, cos, sin, no_cache)
            cache.keys.append(key)
            cache.values.append(value)
        return cache
