"""ada_rms_norm: the registry's kernel matches the reference, and the reference is right."""

import torch

from operators import REGISTRY, ops, use_kernel_profile

DECLARATION = REGISTRY.declaration("ada_rms_norm")


def test_registry_kernel_meets_the_contract():
    generator = torch.Generator().manual_seed(0)
    x, scale, shift = (
        torch.randn(shape, generator=generator).to(torch.bfloat16)
        for shape in ((2, 3, 64), (2, 64), (2, 64))
    )
    with use_kernel_profile("none"):
        got = ops.ada_rms_norm(x, scale, shift)
    assert DECLARATION.contract.check("y", got, DECLARATION.reference(x, scale, shift)) is None


def test_reference_by_hand():
    # rms(3, 4) = sqrt(12.5); y = (3, 4) / sqrt(12.5) * (1 + (1, -0.5)) + (0.25, 1)
    x = torch.tensor([[[3.0, 4.0]]], dtype=torch.bfloat16)
    scale = torch.tensor([[1.0, -0.5]], dtype=torch.bfloat16)
    shift = torch.tensor([[0.25, 1.0]], dtype=torch.bfloat16)
    expected = torch.tensor([[[1.9471, 1.5657]]])
    got = DECLARATION.reference(x, scale, shift).float()
    torch.testing.assert_close(got, expected, rtol=2**-8, atol=0)
