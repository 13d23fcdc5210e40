"""gated_gelu_projection: the reference is the gated MLP's first half, and the registry runs
the unfused production path bit for bit."""

import math

import torch
import torch.nn.functional as F

from operators import REGISTRY, ops, use_kernel_profile
from operators.catalog.gated_gelu import gated_gelu_triton

DECLARATION = REGISTRY.declaration("gated_gelu_projection")


def _bf16(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(torch.bfloat16)


def test_reference_matches_the_closed_form():
    generator = torch.Generator().manual_seed(0)
    x, gate_weight, up_weight = (
        torch.randn(*shape, generator=generator, dtype=torch.float64)
        for shape in ((5, 24), (40, 24), (40, 24))
    )
    gate, up = x @ gate_weight.T, x @ up_weight.T
    inner = math.sqrt(2 / math.pi) * (gate + 0.044715 * gate**3)
    expected = 0.5 * gate * (1 + torch.tanh(inner)) * up
    got = DECLARATION.reference(x, gate_weight, up_weight)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_reference_by_hand():
    # x = (1, 2): gate rows give 1, -1, 0; up rows give 2, 1, 5.
    # gelu_tanh(1) = 0.8412, gelu_tanh(-1) = -0.1588, gelu_tanh(0) = 0.
    x = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    gate_weight = torch.tensor([[1.0, 0.0], [1.0, -1.0], [0.0, 0.0]], dtype=torch.float64)
    up_weight = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 2.0]], dtype=torch.float64)
    expected = torch.tensor([[1.6824, -0.1588, 0.0]], dtype=torch.float64)
    got = DECLARATION.reference(x, gate_weight, up_weight)
    torch.testing.assert_close(got, expected, rtol=2e-4, atol=1e-12)


def test_registry_call_is_the_unfused_production_path_bit_for_bit():
    x, gate_weight, up_weight = _bf16(9, 96, seed=1), _bf16(160, 96, seed=2), _bf16(160, 96, seed=3)
    with use_kernel_profile("none"):
        got = ops.gated_gelu_projection(x, gate_weight, up_weight)
    unfused = gated_gelu_triton(F.linear(x, gate_weight), F.linear(x, up_weight))
    assert torch.equal(got.view(torch.int16), unfused.view(torch.int16))
    expected = DECLARATION.reference(x, gate_weight, up_weight)
    assert DECLARATION.contract.check("out", got, expected) is None


def test_torch_profile_runs_the_reference():
    x, gate_weight, up_weight = _bf16(3, 64, seed=4), _bf16(128, 64, seed=5), _bf16(128, 64, seed=6)
    with use_kernel_profile("torch"):
        got = ops.gated_gelu_projection(x, gate_weight, up_weight)
    expected = F.gelu(F.linear(x, gate_weight), approximate="tanh") * F.linear(x, up_weight)
    assert torch.equal(got.view(torch.int16), expected.view(torch.int16))
