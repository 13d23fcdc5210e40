"""rotate_qk: the registry's kernel is bit-exact with the reference, and the reference is right."""

import torch

from operators import REGISTRY, ops, use_kernel_profile

DECLARATION = REGISTRY.declaration("rotate_qk")


def test_registry_kernel_is_bit_exact():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 3, 16, generator=generator).to(torch.bfloat16)
    k = torch.randn(2, 2, 3, 16, generator=generator).to(torch.bfloat16)
    angles = torch.rand(3, 8, generator=generator).repeat(1, 2) * 6.28
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)
    with use_kernel_profile("none"):
        q_out, k_out = ops.rotate_qk(q, k, cos, sin)
    q_ref, k_ref = DECLARATION.reference(q, k, cos, sin)
    assert DECLARATION.contract.check("q_out", q_out, q_ref) is None
    assert DECLARATION.contract.check("k_out", k_out, k_ref) is None


def test_reference_by_hand():
    # rotate_half(1, 2) = (-2, 1): (1, 2) * 0.5 + (-2, 1) * 0.25 = (0, 1.25)
    x = torch.tensor([[[[1.0, 2.0]]]], dtype=torch.bfloat16)
    cos = torch.tensor([[0.5, 0.5]], dtype=torch.bfloat16)
    sin = torch.tensor([[0.25, 0.25]], dtype=torch.bfloat16)
    q_out, k_out = DECLARATION.reference(x, x, cos, sin)
    assert q_out.float().tolist() == [[[[0.0, 1.25]]]]
    assert torch.equal(q_out, k_out)
