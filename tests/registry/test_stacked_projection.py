"""stacked_projection: the reference is x W_i^T for each weight, the production path is the
same products bit for bit, and the modulation runs it."""

import torch
import torch.nn.functional as F

from examples.action_expert import Modulation
from examples.config import TINY
from examples.layers import WeightFactory
from operators import REGISTRY, ops, record_registry_hits, use_kernel_profile

DECLARATION = REGISTRY.declaration("stacked_projection")


def draw(*shapes: tuple[int, ...], dtype=torch.float64) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [
        torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype) for shape in shapes
    ]


def test_reference_is_one_product_per_weight():
    x, *weights = draw((3, 16), (5, 16), (5, 16), (5, 16))
    got = DECLARATION.reference(x, *weights)
    assert isinstance(got, tuple) and len(got) == 3
    for projection, weight in zip(got, weights, strict=True):
        expected = torch.einsum("bk,nk->bn", x, weight)
        torch.testing.assert_close(projection, expected, rtol=1e-12, atol=1e-12)


def test_reference_by_hand():
    # x = [1, 2]: [1, 2] . [3, 4] = 11, [1, 2] . [-1, 0.5] = 0, [1, 2] . [0.25, 0] = 0.25
    x = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    weights = [torch.tensor([row], dtype=torch.float64) for row in ([3, 4], [-1, 0.5], [0.25, 0])]
    got = [projection.item() for projection in DECLARATION.reference(x, *weights)]
    assert got == [11.0, 0.0, 0.25]


def test_production_path_is_the_reference_bit_for_bit():
    x, *weights = draw((2, 64), (48, 64), (48, 64), (48, 64), dtype=torch.bfloat16)
    with use_kernel_profile("none"):
        got = ops.stacked_projection(x, *weights)
    expected = DECLARATION.reference(x, *weights)
    for spec, projection, reference in zip(DECLARATION.outputs, got, expected, strict=True):
        assert DECLARATION.contract.check(spec.name, projection, reference) is None
        assert torch.equal(projection, reference)


def test_modulation_projects_through_the_registry():
    modulation = Modulation(TINY, WeightFactory(seed=3))
    (condition,) = draw((2, TINY.width), dtype=torch.bfloat16)
    with use_kernel_profile("none"), record_registry_hits() as hits:
        scale, shift, gate = modulation(condition)
    assert sum(n for (name, _, _), n in hits.items() if name == "stacked_projection") == 1
    assert torch.equal(scale, F.linear(condition, modulation.scale_weight))
    assert torch.equal(shift, F.linear(condition, modulation.shift_weight))
    assert torch.equal(gate, F.linear(condition, modulation.gate_weight))
