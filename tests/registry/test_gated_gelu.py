"""gated_gelu: the registry's kernel matches the reference, and the reference is right."""

import torch

from operators import REGISTRY, ops, use_kernel_profile

DECLARATION = REGISTRY.declaration("gated_gelu")


def test_registry_kernel_meets_the_contract():
    generator = torch.Generator().manual_seed(0)
    gate, up = (torch.randn(3, 96, generator=generator).to(torch.bfloat16) for _ in range(2))
    with use_kernel_profile("none"):
        got = ops.gated_gelu(gate, up)
    assert DECLARATION.contract.check("out", got, DECLARATION.reference(gate, up)) is None


def test_reference_by_hand():
    # gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))): 0.8412 at 1, -0.1588 at -1
    gate = torch.tensor([[1.0, -1.0, 0.0]], dtype=torch.bfloat16)
    up = torch.tensor([[2.0, 1.0, 5.0]], dtype=torch.bfloat16)
    expected = torch.tensor([[1.6824, -0.1588, 0.0]])
    torch.testing.assert_close(
        DECLARATION.reference(gate, up).float(), expected, rtol=2**-7, atol=0
    )
