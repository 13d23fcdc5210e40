"""The tiny model under `none` stays within what the contracts promise; broken kernels do not."""

import torch

from examples.config import TINY
from examples.expectation import compare_outputs, compare_profiles, roundings_in_quadrature
from operators import REGISTRY, KernelSelection, OperatorRegistry

CATALOG = {declaration.name for declaration in REGISTRY}
"""Every registered operator: a registration adds its own, which must reach the outputs too."""
UNUSED = {"stacked_projection", "gated_gelu", "gated_residual"}
"""Registered, not called by the model: one condition's modulation (the model computes every
step's at once through modulation_over_steps), the GELU product that gated_gelu_projection's
production kernel runs inside itself, and the gated residual that gated_residual_norm's and
gated_down_projection's production paths run inside themselves."""


def references_except(**broken) -> KernelSelection:
    """A `none` selection over the catalog on references, with some preferred kernels broken."""
    registry = OperatorRegistry()
    for declaration in REGISTRY:
        preferred = broken.get(declaration.name)
        registry.register(declaration.model_copy(update={"preferred": preferred}))
    return KernelSelection("none", registry=registry)


def attention_ignoring_the_prefix(q, k_cache, v_cache, k, v, scale):
    """A plausible bug: the action tokens attend only to themselves."""
    reference = REGISTRY.declaration("split_kv_attention").reference
    return reference(q, k_cache[:, :, :0], v_cache[:, :, :0], k, v, scale)


def gated_gelu_projection_with_swapped_weights(x, gate_weight, up_weight):
    """A plausible bug: the activation is applied to the wrong projection."""
    return REGISTRY.declaration("gated_gelu_projection").reference(x, up_weight, gate_weight)


def test_none_agrees_with_torch_within_the_contract_expectation(
    tiny_none_outputs, tiny_torch_outputs, tiny_calls_per_output
):
    comparisons = compare_outputs(tiny_torch_outputs, tiny_none_outputs, tiny_calls_per_output)
    assert {c.name for c in comparisons} == {
        "actions",
        "first_velocity",
        "prefix_keys",
        "prefix_values",
        "vision_features",
    }
    for comparison in comparisons:
        assert comparison.within, comparison
    by_name = {c.name: c for c in comparisons}
    # At these sizes the interpreted kernels round to the same BF16 values as the references,
    # so the outputs may match bit for bit; what `none` ran is what it resolved.
    production = KernelSelection("none")
    for name in CATALOG:
        assert production.resolve(name).preferred is REGISTRY.declaration(name).preferred
    assert by_name["vision_features"].bound == 0.0


def test_every_catalog_operator_feeds_the_actions(tiny_calls_per_output):
    actions = tiny_calls_per_output["actions"]
    assert set(actions) == CATALOG - UNUSED
    assert {"split_kv_attention", "modulation_over_steps", "gated_residual_norm"} <= set(actions)
    # one denoise step: one final norm plus one per expert layer (its MLP's norm is
    # gated_residual_norm's), and the two modulations of each layer computed before the
    # steps, which feed every step
    assert actions["ada_rms_norm"] == TINY.expert_layers + 1
    assert actions["gated_residual_norm"] == TINY.expert_layers
    assert actions["modulation_over_steps"] == 2 * TINY.expert_layers
    assert actions["split_kv_attention"] == TINY.prefix_layers + TINY.expert_layers
    assert tiny_calls_per_output["vision_features"] == {}
    assert roundings_in_quadrature(actions) > roundings_in_quadrature(
        tiny_calls_per_output["prefix_keys"]
    )


def test_an_attention_kernel_that_ignores_the_prefix_is_caught():
    broken = references_except(split_kv_attention=attention_ignoring_the_prefix)
    comparisons = {c.name: c for c in compare_profiles(TINY, 1, 0, "cpu", candidate=broken)}
    assert not comparisons["first_velocity"].within and not comparisons["actions"].within
    assert comparisons["first_velocity"].max_abs_difference > comparisons["first_velocity"].bound
    # the prefix encoder attends with an empty cache, where the bug changes nothing
    assert comparisons["prefix_keys"].within and comparisons["vision_features"].within


def test_a_gated_gelu_projection_with_swapped_weights_is_caught():
    broken = references_except(gated_gelu_projection=gated_gelu_projection_with_swapped_weights)
    comparisons = {c.name: c for c in compare_profiles(TINY, 1, 0, "cpu", candidate=broken)}
    assert not comparisons["first_velocity"].within and not comparisons["actions"].within
    assert comparisons["prefix_keys"].within  # the prefix MLP runs after this layer's K/V


def test_references_everywhere_match_torch_exactly():
    comparisons = compare_profiles(TINY, 1, 0, "cpu", candidate=references_except())
    assert all(c.within and c.max_abs_difference == 0 for c in comparisons)


def test_an_unrouted_output_must_match_bit_for_bit(tiny_torch_outputs, tiny_calls_per_output):
    nudged = dict(tiny_torch_outputs)
    features = tiny_torch_outputs["vision_features"].clone()
    features.view(torch.int16).view(-1)[0] += 1  # one BF16 step at one element
    nudged["vision_features"] = features
    comparisons = {
        c.name: c for c in compare_outputs(tiny_torch_outputs, nudged, tiny_calls_per_output)
    }
    assert not comparisons["vision_features"].within
    assert comparisons["actions"].within


def test_nan_and_a_wrong_shape_are_outside(tiny_torch_outputs, tiny_calls_per_output):
    broken = dict(tiny_torch_outputs)
    actions = tiny_torch_outputs["actions"].clone()
    actions[0, 0, 0] = float("nan")
    broken["actions"] = actions
    broken["prefix_keys"] = tiny_torch_outputs["prefix_keys"][..., :-1]
    comparisons = {
        c.name: c for c in compare_outputs(tiny_torch_outputs, broken, tiny_calls_per_output)
    }
    assert not comparisons["actions"].within
    assert not comparisons["prefix_keys"].within
