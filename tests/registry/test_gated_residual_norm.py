"""gated_residual_norm: the reference is the gated residual and the adaptive RMSNorm of that
sum; the production path is the former code bit for bit; the expert layer's attention
residual and its MLP's norm are one registry call."""

import torch

from examples.config import TINY
from operators import REGISTRY, ops, use_kernel_profile
from tests.registry.tiny_expert_layer import expert_layer_call

DECLARATION = REGISTRY.declaration("gated_residual_norm")


def draw(*shapes: tuple[int, ...], dtype=torch.float64) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [
        torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype) for shape in shapes
    ]


def test_reference_by_hand():
    # hidden = [1, 1] + [2, 6] * [0.5, 0.5] = [2, 4]; mean square 10, so normed =
    # [2, 4] / sqrt(10) * (1 + [1, 3]) + [0.5, -1]
    residual = torch.tensor([[[1.0, 1.0]]], dtype=torch.float64)
    update = torch.tensor([[[2.0, 6.0]]], dtype=torch.float64)
    gate = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    scale = torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    shift = torch.tensor([[0.5, -1.0]], dtype=torch.float64)
    hidden, normed = DECLARATION.reference(residual, update, gate, scale, shift, eps=0.0)
    assert hidden.tolist() == [[[2.0, 4.0]]]
    root = 10.0**0.5
    expected = torch.tensor([[[2 / root * 2 + 0.5, 4 / root * 4 - 1.0]]], dtype=torch.float64)
    # the norm computes in float32, as the model's eager code does, whatever the input dtype
    torch.testing.assert_close(normed, expected, rtol=1e-6, atol=1e-6)


def test_each_token_is_normalised_over_its_own_row():
    residual, update, gate, scale, shift = draw((2, 3, 8), (2, 3, 8), (2, 8), (2, 8), (2, 8))
    hidden, normed = DECLARATION.reference(residual, update, gate, scale, shift, eps=1e-6)
    for batch in range(2):
        for token in range(3):
            row = residual[batch, token] + update[batch, token] * gate[batch]
            torch.testing.assert_close(hidden[batch, token], row, rtol=1e-12, atol=1e-12)
            unit = row / (row.pow(2).mean() + 1e-6).sqrt()
            expected = unit * (1 + scale[batch]) + shift[batch]
            torch.testing.assert_close(normed[batch, token], expected, rtol=1e-5, atol=1e-5)


def test_production_path_is_the_former_code_bit_for_bit():
    residual, update, gate, scale, shift = draw(
        (2, 5, 64), (2, 5, 64), (2, 64), (2, 64), (2, 64), dtype=torch.bfloat16
    )
    with use_kernel_profile("none"):
        hidden, normed = ops.gated_residual_norm(residual, update, gate, scale, shift)
        expected_hidden = ops.gated_residual(residual, update, gate)
        expected_normed = ops.ada_rms_norm(expected_hidden, scale, shift)
    assert torch.equal(hidden, expected_hidden) and torch.equal(normed, expected_normed)


def test_the_expert_layer_adds_its_attention_and_norms_for_the_mlp_in_one_call():
    out, calls = expert_layer_call(draw)
    assert calls.get("gated_residual_norm") == 1
    assert "gated_residual" not in calls and calls.get("ada_rms_norm") == 1
    assert out.shape == (2, 5, TINY.width)
