"""The contract is "no less accurate than stock": stock and every production kernel pass it on
every distribution, a single-rounding flash formulation of attention passes it, and a
candidate one BF16 rounding worse than stock, or off in a few elements, is refused."""

import pytest
import torch

from operators.accuracy import AccuracyCheck
from operators.catalog import CATALOG
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import DISTRIBUTIONS, as_outputs

SCALED = {declaration.name: scaled_down(declaration) for declaration in CATALOG}
SEEDS = (0, 1)


def _cases():
    for declaration in SCALED.values():
        for workload in declaration.workloads:
            yield pytest.param(declaration, workload, id=f"{declaration.name}-{workload.name}")


@pytest.mark.parametrize(("declaration", "workload"), list(_cases()))
def test_stock_passes_its_own_contract_on_every_distribution(declaration, workload):
    stock = declaration.stock or declaration.reference
    for seed in SEEDS:
        for distribution in DISTRIBUTIONS:
            violation = first_violation(declaration, stock, workload, seed, distribution)
            assert violation is None, f"seed {seed}, {distribution}: {violation.describe()}"


def _rounded_twice(declaration):
    """The exact result rounded to BF16 at 1.5 times its size, then rounded again: one more
    independent rounding of a term as large as the output than the reference does."""

    def candidate(*inputs, **params):
        outputs = []
        for exact in as_outputs(declaration.reference(*(_wide(t) for t in inputs), **params)):
            if not exact.is_floating_point():
                outputs.append(exact)
                continue
            outputs.append(((exact * 1.5).bfloat16().float() / 1.5).bfloat16())
        return tuple(outputs) if len(outputs) > 1 else outputs[0]

    return candidate


def _wide(value):
    return value.float() if isinstance(value, torch.Tensor) and value.is_floating_point() else value


@pytest.mark.parametrize("name", ["rms_norm", "stacked_projection", "attention_output"])
def test_a_candidate_one_rounding_worse_than_stock_is_refused(name):
    """Where stock rounds once (these operators' stock is the reference), a second rounding
    of the result is refused."""
    declaration = SCALED[name]
    workload = declaration.workloads[-1]
    refused = [
        first_violation(declaration, _rounded_twice(declaration), workload, seed, "normal")
        for seed in SEEDS
    ]
    assert all(violation is not None for violation in refused), refused
    assert "exceeds the bound" in refused[0].reason


def test_a_few_wrong_elements_are_refused_by_the_largest_error():
    declaration = SCALED["rms_norm"]
    workload = declaration.workloads[-1]
    inputs = declaration.make_inputs(workload, 0, "normal", "cpu")
    check = AccuracyCheck.on_inputs(declaration, inputs)
    got = check.reference[0].clone()
    got.view(-1)[5] = got.view(-1)[5] * 1.25 + 0.5  # one element far off, RMS barely moves
    violation = check.violation(got)
    assert violation is not None and "max" in violation.reason
    assert bool(check.bad_elements(0, got).view(-1)[5])
    nan = check.reference[0].clone()
    nan.view(-1)[0] = float("nan")
    assert "NaN/Inf" in check.violation(nan).reason


def flash_attention_single_rounding(
    q, k_cache, v_cache, k, v, scale, block=16, rounded_scores=False
):
    """Flash-style attention as stock's flash kernels do it: FP32 scores and online softmax
    over key blocks, the weights rounded once to BF16 for the product with V, FP32 sums,
    the output rounded once. `rounded_scores` rounds the scores to BF16 too: one rounding
    more than stock, of terms larger than the output."""
    group = q.shape[1] // k.shape[1]
    keys = torch.cat((k_cache, k), dim=2).repeat_interleave(group, dim=1)
    values = torch.cat((v_cache, v), dim=2).repeat_interleave(group, dim=1)
    queries = q.float()
    rows = q.shape[:-1]
    running_max = torch.full(rows, -torch.inf)
    running_sum = torch.zeros(rows)
    acc = torch.zeros(*rows, v.shape[-1])
    for start in range(0, keys.shape[2], block):
        key = keys[:, :, start : start + block].float()
        value = values[:, :, start : start + block].float()
        scores = queries @ key.transpose(-1, -2) * scale
        if rounded_scores:
            scores = scores.bfloat16().float()
        new_max = torch.maximum(running_max, scores.amax(dim=-1))
        correction = torch.exp(running_max - new_max)
        weights = torch.exp(scores - new_max[..., None])
        running_sum = running_sum * correction + weights.sum(dim=-1)
        acc = acc * correction[..., None] + weights.bfloat16().float() @ value
        running_max = new_max
    return (acc / running_sum[..., None]).to(q.dtype)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_single_rounding_flash_attention_passes_on_every_distribution(distribution):
    declaration = SCALED["split_kv_attention"]
    for workload in declaration.workloads:
        for seed in SEEDS:
            violation = first_violation(
                declaration, flash_attention_single_rounding, workload, seed, distribution
            )
            assert violation is None, f"{workload.name} seed {seed}: {violation.describe()}"


def test_the_bound_follows_stock_where_stock_is_the_less_accurate():
    declaration = SCALED["split_kv_attention"]
    inputs = declaration.make_inputs(declaration.workloads[0], 0, "large", "cpu")
    check = AccuracyCheck.on_inputs(declaration, inputs)
    bound = check.bounds[0]
    assert bound.stock_rms >= bound.reference_rms
    assert bound.rms == pytest.approx(1.25 * bound.stock_rms)


def test_attention_that_also_rounds_its_large_scores_is_refused():
    """On the CPU stock's math SDPA rounds its BF16 scores too, so only where the scores are
    large (the `large` draws) is the extra rounding past stock's own error."""
    declaration = SCALED["split_kv_attention"]

    def candidate(*inputs, **params):
        return flash_attention_single_rounding(*inputs, **params, rounded_scores=True)

    refused = [
        first_violation(declaration, candidate, workload, seed, "large")
        for workload in declaration.workloads
        for seed in SEEDS
    ]
    assert all(violation is not None for violation in refused), refused


def test_a_declared_stock_sloppier_than_the_reference_is_refused_and_sdpa_is_not():
    from operators.accuracy import stock_loosening

    declaration = SCALED["split_kv_attention"]
    for workload in declaration.workloads:
        for distribution in DISTRIBUTIONS:
            inputs = declaration.make_inputs(workload, 0, distribution, "cpu")
            bound = AccuracyCheck.on_inputs(declaration, inputs).bounds[0]
            assert stock_loosening(bound) is None, (workload.name, distribution)

    def sloppy(*inputs, **params):
        (exact,) = as_outputs(declaration.reference(*(_wide(t) for t in inputs), **params))
        return exact.to(torch.float8_e4m3fn).to(torch.bfloat16)

    inputs = declaration.make_inputs(declaration.workloads[0], 0, "normal", "cpu")
    loose = declaration.model_copy(update={"stock": sloppy})
    reason = stock_loosening(AccuracyCheck.on_inputs(loose, inputs).bounds[0])
    assert reason is not None and "may not loosen" in reason
