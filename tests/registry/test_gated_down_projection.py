"""gated_down_projection: the reference is the down product added to the residual scaled by the
gate, row r of `activated` being residual's token r (batch-major); the production path is the
former code bit for bit; the action expert's MLP ends in one registry call of it."""

import torch
import torch.nn.functional as F

from examples.config import TINY
from operators import REGISTRY, ops, use_kernel_profile
from tests.registry.tiny_expert_layer import expert_layer_call

DECLARATION = REGISTRY.declaration("gated_down_projection")


def draw(*shapes: tuple[int, ...], dtype=torch.float64) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [
        torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype) for shape in shapes
    ]


def test_reference_adds_each_tokens_gated_product_to_its_residual():
    residual, activated, weight, gate = draw((2, 3, 4), (6, 5), (4, 5), (2, 4))
    out = DECLARATION.reference(residual, activated, weight, gate)
    assert out.shape == (2, 3, 4)
    for batch in range(2):
        for token in range(3):
            row = activated[batch * 3 + token]
            expected = residual[batch, token] + (weight @ row) * gate[batch]
            torch.testing.assert_close(out[batch, token], expected, rtol=1e-12, atol=1e-12)


def test_reference_by_hand():
    # one token: 1 + ([2, 3] . [10, 100]) * 0.5 = 1 + 320 * 0.5 = 161
    residual = torch.tensor([[[1.0]]], dtype=torch.float64)
    activated = torch.tensor([[2.0, 3.0]], dtype=torch.float64)
    weight = torch.tensor([[10.0, 100.0]], dtype=torch.float64)
    gate = torch.tensor([[0.5]], dtype=torch.float64)
    assert DECLARATION.reference(residual, activated, weight, gate).item() == 161.0


def test_production_path_is_the_former_code_bit_for_bit():
    residual, activated, weight, gate = draw(
        (2, 5, 64), (10, 96), (64, 96), (2, 64), dtype=torch.bfloat16
    )
    with use_kernel_profile("none"):
        got = ops.gated_down_projection(residual, activated, weight, gate)
        expected = ops.gated_residual(residual, F.linear(activated, weight).view(2, 5, -1), gate)
    assert torch.equal(got, expected)


def test_the_expert_layer_ends_its_mlp_in_one_registry_call():
    out, calls = expert_layer_call(draw)
    assert calls.get("gated_down_projection") == 1
    assert out.shape == (2, 5, TINY.width)
