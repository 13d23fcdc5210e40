"""split_kv_attention: the registry's kernel matches the reference, and the reference is right."""

import math

import torch

from operators import REGISTRY, ops, use_kernel_profile

DECLARATION = REGISTRY.declaration("split_kv_attention")


def test_registry_kernel_meets_the_contract_with_and_without_a_prefix():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 3, 16, generator=generator).to(torch.bfloat16)
    k, v = (torch.randn(1, 1, 3, 16, generator=generator).to(torch.bfloat16) for _ in range(2))
    for prefix in (0, 5):
        cache = [torch.randn(1, 1, prefix, 16, generator=generator).to(torch.bfloat16)] * 2
        with use_kernel_profile("none"):
            got = ops.split_kv_attention(q, *cache, k, v, 0.25)
        expected = DECLARATION.reference(q, *cache, k, v, 0.25)
        assert DECLARATION.contract.check("out", got, expected) is None


def test_reference_by_hand():
    # scores (0, ln 3) give weights (1/4, 3/4): out = (4, 0) / 4 + (0, 8) * 3/4 = (1, 6)
    q = torch.tensor([[[[1.0, 0.0]]]], dtype=torch.bfloat16)
    k_cache = torch.tensor([[[[0.0, 0.0]]]], dtype=torch.bfloat16)
    v_cache = torch.tensor([[[[4.0, 0.0]]]], dtype=torch.bfloat16)
    k = torch.tensor([[[[1.0, 0.0]]]], dtype=torch.bfloat16)
    v = torch.tensor([[[[0.0, 8.0]]]], dtype=torch.bfloat16)
    got = DECLARATION.reference(q, k_cache, v_cache, k, v, math.log(3.0)).float()
    torch.testing.assert_close(got, torch.tensor([[[[1.0, 6.0]]]]), rtol=2**-8, atol=2**-10)
