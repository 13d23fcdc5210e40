"""The FP64 oracle runs a reference's own code in FP64 although it names FP32 inside, and the
error measure tells one BF16 rounding from a worse result."""

import math

import torch

from operators import REGISTRY
from operators.error_measure import relative_rms_error
from operators.fp64_oracle import fp64_outputs


def test_a_reference_that_casts_to_float32_runs_in_float64():
    declaration = REGISTRY.declaration("rms_norm")
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(8, 96, generator=generator, dtype=torch.float64).to(torch.bfloat16)
    weight = torch.randn(96, generator=generator, dtype=torch.float64).to(torch.bfloat16)
    (oracle,) = fp64_outputs(declaration.reference, [x, weight], declaration.params)
    x64, weight64 = x.double(), weight.double()
    exact = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * weight64
    assert oracle.dtype == torch.float64
    assert torch.allclose(oracle, exact, rtol=1e-13, atol=0)
    in_float32 = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)) * weight
    assert not torch.allclose(oracle, in_float32.double(), rtol=1e-13, atol=0)


def test_the_measure_ranks_one_rounding_below_one_step_off_and_non_finite_as_infinite():
    oracle = torch.randn(4096, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    rounded = oracle.to(torch.bfloat16)
    stepped = torch.nextafter(rounded, torch.full_like(rounded, math.inf))
    once, off = relative_rms_error(rounded, oracle), relative_rms_error(stepped, oracle)
    assert 2.0**-10 < once < 2.0**-8 and off > 3 * once
    broken = rounded.clone()
    broken[7] = math.nan
    assert relative_rms_error(broken, oracle) == math.inf
