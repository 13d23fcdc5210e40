"""gated_residual: the registry's kernel is bit-exact with the reference, which is eager BF16."""

import torch

from operators import REGISTRY, ops, use_kernel_profile

DECLARATION = REGISTRY.declaration("gated_residual")


def test_registry_kernel_is_bit_exact():
    generator = torch.Generator().manual_seed(0)
    residual, update, gate = (
        torch.randn(shape, generator=generator).to(torch.bfloat16)
        for shape in ((2, 3, 64), (2, 3, 64), (2, 64))
    )
    with use_kernel_profile("none"):
        got = ops.gated_residual(residual, update, gate)
    expected = DECLARATION.reference(residual, update, gate)
    assert DECLARATION.contract.check("out", got, expected) is None


def test_reference_rounds_the_product_before_the_add():
    # 1.0078125^2 = 1.01568604 rounds to 1.015625; 1.0234375 + 1.015625 = 2.0390625 is a tie
    # that rounds to even, 2.03125. One fused rounding would give 2.046875 instead.
    residual = torch.tensor([[[1.0234375, 1.0]]], dtype=torch.bfloat16)
    update = torch.tensor([[[1.0078125, 3.0]]], dtype=torch.bfloat16)
    gate = torch.tensor([[1.0078125, 0.5]], dtype=torch.bfloat16)
    expected = torch.tensor([[[2.03125, 2.5]]])
    assert torch.equal(DECLARATION.reference(residual, update, gate).float(), expected)
