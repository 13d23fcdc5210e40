"""The transformer pieces the prefix encoder and the action expert share.

Norms, the query/key/value projections, rotary embedding, attention, its output projection
and the MLP's gated projection go through the operator registry; the MLP's down projection
stays a plain `F.linear` call.
"""

import torch
import torch.nn.functional as F
from torch import nn

from examples.config import ExampleSize
from operators import ops

ROPE_BASE = 10_000.0


class WeightFactory:
    """Draws every weight from one seeded CPU generator, so a seed fixes the whole model."""

    def __init__(self, seed: int) -> None:
        self.generator = torch.Generator().manual_seed(seed)

    def matrix(self, rows: int, columns: int, gain: float = 1.0) -> nn.Parameter:
        """A (rows, columns) projection with variance gain^2 / columns, in BF16."""
        values = torch.randn(rows, columns, generator=self.generator) * (gain / columns**0.5)
        return nn.Parameter(values.to(torch.bfloat16), requires_grad=False)

    def vector(self, size: int, mean: float = 0.0, spread: float = 1.0) -> nn.Parameter:
        values = mean + spread * torch.randn(size, generator=self.generator)
        return nn.Parameter(values.to(torch.bfloat16), requires_grad=False)


def rope_tables(
    first_position: int, tokens: int, head_dim: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables (tokens, head_dim) for rotate-half RoPE, both halves equal, in BF16.

    Computed on the host once, when a model is built; models keep them as buffers, so a
    forward pass never copies a table from the host (a CUDA graph can capture it).
    """
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim
    frequencies = ROPE_BASE**-exponents
    positions = torch.arange(first_position, first_position + tokens, dtype=torch.float32)
    angles = torch.outer(positions, frequencies)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)


def empty_cache(size: ExampleSize, batch: int, device: torch.device) -> torch.Tensor:
    """A K or V cache with no prefix tokens, for attention that sees only the current tokens."""
    shape = (batch, size.kv_heads, 0, size.head_dim)
    return torch.empty(shape, dtype=torch.bfloat16, device=device)


class SelfAttention(nn.Module):
    """Grouped-query attention of the current tokens over a cached prefix plus themselves."""

    def __init__(self, size: ExampleSize, weights: WeightFactory, output_gain: float) -> None:
        super().__init__()
        self.size = size
        self.query_weight = weights.matrix(size.query_heads * size.head_dim, size.width)
        self.key_weight = weights.matrix(size.kv_heads * size.head_dim, size.width)
        self.value_weight = weights.matrix(size.kv_heads * size.head_dim, size.width)
        self.output_weight = weights.matrix(
            size.width, size.query_heads * size.head_dim, gain=output_gain
        )

    def forward(self, hidden, cos, sin, key_cache, value_cache):
        """Returns the attention output and this call's rotated keys and values."""
        query, key, value = ops.qkv_projection(
            hidden, self.query_weight, self.key_weight, self.value_weight, self.size.head_dim
        )
        query, key = ops.rotate_qk(query, key, cos, sin)
        attended = ops.split_kv_attention(
            query, key_cache, value_cache, key, value, self.size.attention_scale
        )
        return ops.attention_output(attended, self.output_weight), key, value


class GatedMlp(nn.Module):
    """The Gemma-style MLP: down(gelu_tanh(gate(x)) * up(x))."""

    def __init__(self, size: ExampleSize, weights: WeightFactory, output_gain: float) -> None:
        super().__init__()
        self.gate_weight = weights.matrix(size.mlp_width, size.width)
        self.up_weight = weights.matrix(size.mlp_width, size.width)
        self.down_weight = weights.matrix(size.width, size.mlp_width, gain=output_gain)

    def activated(self, hidden: torch.Tensor) -> torch.Tensor:
        """gelu_tanh(gate(x)) * up(x) of every token, as (batch * tokens, mlp_width) rows."""
        batch, tokens, width = hidden.shape
        rows = hidden.reshape(batch * tokens, width)
        return ops.gated_gelu_projection(rows, self.gate_weight, self.up_weight)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        batch, tokens, _ = hidden.shape
        return F.linear(self.activated(hidden), self.down_weight).view(batch, tokens, -1)
