"""One call of the tiny model's attention layer with the registry's hits recorded: what the
tests of the operators attention routes through (qkv_projection, attention_output) share."""

import torch

from examples.config import TINY
from examples.layers import SelfAttention, WeightFactory, empty_cache, rope_tables
from operators import record_registry_hits, use_kernel_profile


def attention_call(hidden: torch.Tensor):
    """(the layer, its outputs, the number of registry hits per operator name) for one call
    on `hidden` (batch 2, 5 tokens) under the `torch` profile, with an empty cache."""
    attention = SelfAttention(TINY, WeightFactory(seed=3), output_gain=1.0)
    cos, sin = rope_tables(0, 5, TINY.head_dim)
    cache = empty_cache(TINY, 2, "cpu")
    with use_kernel_profile("torch"), record_registry_hits() as hits:
        outputs = attention(hidden, cos, sin, cache, cache)
    counts: dict[str, int] = {}
    for (name, _, _), n in hits.items():
        counts[name] = counts.get(name, 0) + n
    return attention, outputs, counts
