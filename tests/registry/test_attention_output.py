"""attention_output: the reference is the heads merged into token layout and one product, the
production path is the model's former code bit for bit, and attention's output projection goes
through the registry."""

import torch
import torch.nn.functional as F

from examples.config import TINY
from operators import REGISTRY, ops, use_kernel_profile
from tests.registry.tiny_attention import attention_call

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
    (hidden,) = draw((2, 5, TINY.width), dtype=torch.bfloat16)
    _, (out, _, _), hits = attention_call(hidden)
    assert hits.get("attention_output", 0) == 1
    assert out.shape == (2, 5, TINY.width)
