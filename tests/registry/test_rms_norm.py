"""rms_norm: the registry's kernel matches the reference, and the reference is right."""

import torch

from operators import REGISTRY, ops, use_kernel_profile

DECLARATION = REGISTRY.declaration("rms_norm")


def test_registry_kernel_meets_the_contract():
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    weight = torch.linspace(0.5, 1.5, 64).to(torch.bfloat16)
    with use_kernel_profile("none"):
        got = ops.rms_norm(x, weight)
    assert DECLARATION.contract.check("y", got, DECLARATION.reference(x, weight)) is None


def test_reference_by_hand():
    # mean(3^2, 4^2) = 12.5, so y = (3, 4) / sqrt(12.5) * (1, 2) = (0.8485, 2.2627)
    x = torch.tensor([[3.0, 4.0]], dtype=torch.bfloat16)
    weight = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    expected = torch.tensor([[0.8485, 2.2627]])
    torch.testing.assert_close(
        DECLARATION.reference(x, weight).float(), expected, rtol=2**-8, atol=0
    )
