"""One call of the tiny model's expert layer with the registry's hits recorded: what the
tests of the operators the layer routes through (gated_residual_norm, gated_down_projection)
share."""

import torch

from examples.action_expert import ExpertLayer
from examples.config import TINY
from examples.layers import WeightFactory, empty_cache, rope_tables
from operators import record_registry_hits, use_kernel_profile


def expert_layer_call(draw) -> tuple[torch.Tensor, dict[str, int]]:
    """(the layer's output, the number of registry hits per operator name) for one call on
    hidden states and modulations from `draw(*shapes, dtype=...)` (batch 2, 5 tokens), under
    the `torch` profile, with an empty cache."""
    layer = ExpertLayer(TINY, WeightFactory(seed=3))
    (hidden,) = draw((2, 5, TINY.width), dtype=torch.bfloat16)
    modulations = tuple(tuple(draw((2, TINY.width), dtype=torch.bfloat16) * 3) for _ in range(2))
    cos, sin = rope_tables(0, 5, TINY.head_dim)
    cache = empty_cache(TINY, 2, "cpu")
    with use_kernel_profile("torch"), record_registry_hits() as hits:
        out = layer(hidden, modulations, cos, sin, cache, cache)
    counts: dict[str, int] = {}
    for (name, _, _), n in hits.items():
        counts[name] = counts.get(name, 0) + n
    return out, counts
