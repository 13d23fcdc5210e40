"""The precision-downgrade label must not depend on the draw: outputs kept to two mantissa
bits (FP8-E5M2's) are named on every draw, however many tiny or zero values it holds, and an
honest BF16 output never is."""

import torch

from gates.evaluator.detectors.precision import narrower_format

SHAPES = [(1, 64), (4, 256), (50, 1024), (3, 2048)]
SCALES = [1e-3, 1.0, 1e3, 1e-6]


def _draw(seed: int) -> torch.Tensor:
    """An RMSNorm output in FP32 on inputs of varied scale, a third of them mostly zeros."""
    generator = torch.Generator().manual_seed(seed)
    rows, hidden = SHAPES[seed % len(SHAPES)]
    x = torch.randn(rows, hidden, generator=generator) * SCALES[seed % len(SCALES)]
    if seed % 3 == 0:
        x[torch.rand(rows, hidden, generator=generator) < 0.3] = 0
    weight = torch.randn(hidden, generator=generator)
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * weight


def test_two_mantissa_bits_are_named_on_every_draw_and_honest_outputs_never():
    for seed in range(120):
        exact = _draw(seed)
        reference = exact.to(torch.bfloat16)
        truncated = (exact.view(torch.int32) & -2097152).view(torch.float32).to(torch.bfloat16)
        assert narrower_format(truncated, reference) is not None, f"draw {seed} missed"
        assert narrower_format(reference, reference) is None, f"draw {seed} honest flagged"
