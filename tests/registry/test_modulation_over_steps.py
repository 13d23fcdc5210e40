"""modulation_over_steps: the reference is c_s W_j^T for every step and weight, step-major; the
production path is the same products bit for bit; the model computes every step's modulations
through it before the steps run, and its outputs stay the per-step ones."""

import torch
import torch.nn.functional as F

from examples.action_expert import Modulation
from examples.config import TINY
from examples.layers import WeightFactory
from operators import REGISTRY, ops, record_registry_hits, use_kernel_profile

DECLARATION = REGISTRY.declaration("modulation_over_steps")
STEPS = 10


def draw(*shapes: tuple[int, ...], dtype=torch.float64) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [
        torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype) for shape in shapes
    ]


def test_reference_is_one_product_per_step_and_weight_step_major():
    operands = draw(*[(3, 16)] * STEPS, *[(5, 16)] * 3)
    conditions, weights = operands[:STEPS], operands[STEPS:]
    got = DECLARATION.reference(*operands)
    assert isinstance(got, tuple) and len(got) == 3 * STEPS
    for step, condition in enumerate(conditions):
        for index, weight in enumerate(weights):
            expected = torch.einsum("bk,nk->bn", condition, weight)
            torch.testing.assert_close(got[3 * step + index], expected, rtol=1e-12, atol=1e-12)


def test_reference_by_hand():
    # step s has condition [s, 1]: [s, 1] . [3, 4] = 3s + 4, [s, 1] . [-1, 0.5] = 0.5 - s,
    # [s, 1] . [0.25, 0] = s / 4
    conditions = [torch.tensor([[float(s), 1.0]], dtype=torch.float64) for s in range(STEPS)]
    weights = [torch.tensor([row], dtype=torch.float64) for row in ([3, 4], [-1, 0.5], [0.25, 0])]
    got = [value.item() for value in DECLARATION.reference(*conditions, *weights)]
    expected = [x for s in range(STEPS) for x in (3.0 * s + 4.0, 0.5 - s, s / 4)]
    assert got == expected


def test_production_path_is_the_reference_bit_for_bit():
    operands = draw(*[(2, 64)] * STEPS, *[(48, 64)] * 3, dtype=torch.bfloat16)
    with use_kernel_profile("none"):
        got = ops.modulation_over_steps(*operands)
    expected = DECLARATION.reference(*operands)
    for spec, projection, reference in zip(DECLARATION.outputs, got, expected, strict=True):
        assert DECLARATION.contract.check(spec.name, projection, reference) is None
        assert torch.equal(projection, reference)


def test_modulation_of_every_step_projects_through_one_registry_call():
    modulation = Modulation(TINY, WeightFactory(seed=3))
    conditions = draw(*[(2, TINY.width)] * STEPS, dtype=torch.bfloat16)
    with use_kernel_profile("none"), record_registry_hits() as hits:
        per_step = modulation(*conditions)
    assert sum(n for (name, _, _), n in hits.items() if name == "modulation_over_steps") == 1
    assert len(per_step) == STEPS
    for condition, (scale, shift, gate) in zip(conditions, per_step, strict=True):
        assert torch.equal(scale, F.linear(condition, modulation.scale_weight))
        assert torch.equal(shift, F.linear(condition, modulation.shift_weight))
        assert torch.equal(gate, F.linear(condition, modulation.gate_weight))
