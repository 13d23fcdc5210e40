"""How far each model output may move when its operators change kernels, from the contracts.

First-order error model. Each registry call on the way to an output may be off by its
contract's k unshared BF16 roundings (2^-8 each, relative), plus 2 more for the plain BF16
projection or residual add after it, whose rounding may then land on the other neighbour.
Calls' errors are taken as independent, so they add in quadrature, and are measured against
the output's largest magnitude. The denoise steps enter the actions weighted by their step
sizes, which sum to 1, so one step's calls count once; the steps' conditioning, computed once
before the steps, feeds every step, so each of its calls counts in one step's share. An output
that no registry call reaches must match bit for bit.
"""

import math
from collections import Counter

import torch
from pydantic import BaseModel, ConfigDict

from examples.config import ExampleSize
from examples.model import ExampleInputs, ExampleModel, build_model, make_inputs
from operators import REGISTRY, KernelSelection, record_registry_hits, use_kernel_profile

FOLLOWING_PLAIN_ROUNDINGS = 2
ATOL = 2.0**-10
"""An absolute allowance per output, for outputs near zero."""
RTOL_PER_ROUNDING = 2.0**-8
"""One BF16 rounding, relative."""


class OutputComparison(BaseModel):
    """One output under a candidate profile against the same output under the reference."""

    model_config = ConfigDict(frozen=True)

    name: str
    shape: tuple[int, ...]
    max_abs_difference: float
    roundings: float
    bound: float
    within: bool


def registry_calls_per_output(model: ExampleModel, inputs: ExampleInputs) -> dict[str, Counter]:
    """Run the model's stages once, counting the registry calls that feed each output."""
    with torch.inference_mode():
        with record_registry_hits() as vision_hits:
            features = model.vision(inputs.patches)
        with record_registry_hits() as prefix_hits:
            cache = model.prefix_encoder(features, inputs.token_ids)
        with record_registry_hits() as conditioning_hits:
            model.step_conditioning(model.step_times(inputs.noise))
        with record_registry_hits() as denoise_hits:
            model.sample_actions(inputs.noise, cache)
    vision = _by_operator(vision_hits)
    prefix = vision + _by_operator(prefix_hits)
    steps = model.size.denoise_steps
    conditioning = _by_operator(conditioning_hits)
    in_steps = _by_operator(denoise_hits) - conditioning
    one_step = conditioning + Counter({name: count // steps for name, count in in_steps.items()})
    return {
        "actions": prefix + one_step,
        "first_velocity": prefix + one_step,
        "prefix_keys": prefix,
        "prefix_values": prefix,
        "vision_features": vision,
    }


def roundings_in_quadrature(calls: Counter) -> float:
    """sqrt of the sum over calls of (k + 2)^2; 0 when no registry call is on the path."""
    total = 0
    for name, count in calls.items():
        roundings = REGISTRY.declaration(name).contract.roundings + FOLLOWING_PLAIN_ROUNDINGS
        total += count * roundings**2
    return math.sqrt(total)


def compare_outputs(
    reference: dict[str, torch.Tensor],
    candidate: dict[str, torch.Tensor],
    calls_per_output: dict[str, Counter],
) -> list[OutputComparison]:
    """Each output's max |candidate - reference| against its expectation from the contracts."""
    comparisons = []
    for name in sorted(reference):
        expected, got = reference[name], candidate[name]
        roundings = roundings_in_quadrature(calls_per_output[name])
        if roundings:
            scale = float(expected.detach().abs().max().double()) if expected.numel() else 0.0
            bound = ATOL + roundings * RTOL_PER_ROUNDING * scale
        else:
            bound = 0.0
        comparisons.append(_compare(name, expected, got, roundings, bound))
    return comparisons


def compare_profiles(
    size: ExampleSize,
    batch: int,
    seed: int,
    device: torch.device | str,
    candidate: str | KernelSelection = "none",
    reference: str | KernelSelection = "torch",
) -> list[OutputComparison]:
    """Run one model and input under two kernel profiles and compare every output."""
    model = build_model(size, seed, device)
    inputs = make_inputs(size, batch, seed, device)
    with use_kernel_profile(reference):
        reference_outputs = model(inputs)
        calls_per_output = registry_calls_per_output(model, inputs)
    with use_kernel_profile(candidate):
        candidate_outputs = model(inputs)
    return compare_outputs(reference_outputs, candidate_outputs, calls_per_output)


def _compare(name, expected, got, roundings, bound) -> OutputComparison:
    same_layout = got.shape == expected.shape and got.dtype == expected.dtype
    if same_layout and expected.numel():
        difference = float((got.detach().double() - expected.detach().double()).abs().max())
    else:
        difference = 0.0 if same_layout else math.inf
    within = same_layout and bool(torch.isfinite(got).all()) and difference <= bound
    if within and bound == 0.0:
        within = torch.equal(got.cpu(), expected.cpu())
    return OutputComparison(
        name=name,
        shape=tuple(expected.shape),
        max_abs_difference=difference,
        roundings=roundings,
        bound=bound,
        within=within,
    )


def _by_operator(hits: Counter) -> Counter:
    calls = Counter()
    for (operator, _file, _qualname), count in hits.items():
        calls[operator] += count
    return calls
