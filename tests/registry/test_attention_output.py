"""attention_output: the reference is the heads merged into token layout and one product, the
production path is the model's former code bit for bit, and attention's output projection goes
through the registry."""

import torch
import torch.nn.functional as F

from examples.config import TINY
from examples.layers import SelfAttention, WeightFactory, empty_cache, rope_tables
from operators import REGISTRY, ops, record_registry_hits, use_kernel_profile

DECLARATION = REGISTRY.declaration("attention_output")


def draw(*shapes: tuple[int, ...], dtype=torch.float64) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [
        torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype) for shape in shapes
    ]


def test_reference_places_each_head_beside_the_others():
    attended, weight = draw((2, 3, 5, 4), (6, 12))
    out = DECLARATION.reference(attended, weight)
    assert out.shape == (2, 5, 6)
    for batch in range(2):
        for token in range(5):
            row = torch.cat([attended[batch, head, token] for head in range(3)])
            torch.testing.assert_close(out[batch, token], weight @ row, rtol=1e-12, atol=1e-12)


def test_reference_by_hand():
    # two heads of one dimension: the token's row is [2, 3]; out = [1*2 + 10*3]
    attended = torch.tensor([[[[2.0]], [[3.0]]]], dtype=torch.float64)
    weight = torch.tensor([[1.0, 10.0]], dtype=torch.float64)
    assert DECLARATION.reference(attended, weight).item() == 32.0


def test_production_path_is_the_former_code_bit_for_bit():
    attended, weight = draw((2, 4, 5, 16), (64, 64), dtype=torch.bfloat16)
    with use_kernel_profile("none"):
        got = ops.attention_output(attended, weight)
    expected = F.linear(attended.transpose(1, 2).reshape(2, 5, -1), weight)
    assert torch.equal(got, expected)


def test_attention_projects_its_output_through_the_registry():
    attention = SelfAttention(TINY, WeightFactory(seed=3), output_gain=1.0)
    (hidden,) = draw((2, 5, TINY.width), dtype=torch.bfloat16)
    cos, sin = rope_tables(0, 5, TINY.head_dim)
    cache = empty_cache(TINY, 2, "cpu")
    with use_kernel_profile("torch"), record_registry_hits() as hits:
        out, _, _ = attention(hidden, cos, sin, cache, cache)
    assert sum(n for (name, _, _), n in hits.items() if name == "attention_output") == 1
    assert out.shape == (2, 5, TINY.width)
