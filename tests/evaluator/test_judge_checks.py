"""The judge's per-case checks, called directly on real rms_norm cases: a repeat that differs
from the first call fails (even when both are within the contract), a wrong repeat gets its
own diagnosis, and the error summary counts only elements where both values are finite."""

import secrets

import pytest
import torch

from gates.evaluator.cases import plan_cases
from gates.evaluator.guard import tensor_digest
from gates.evaluator.judge import CaseFailure, Errors, _check_case
from gates.evaluator.protocol import CaseRecord
from operators import REGISTRY
from operators.accuracy import AccuracyCheck


@pytest.fixture(scope="module")
def repeated_case():
    """A repeated rms_norm case, its inputs, record and the reference's outputs."""
    declaration = REGISTRY.declaration("rms_norm")
    case = next(c for c in plan_cases(declaration, secrets.token_hex(16), "cpu") if c.repeat)
    inputs = declaration.make_inputs(case.as_workload(), case.seed, case.distribution, "cpu")
    outputs = [t.clone() for t in declaration.run_reference(*inputs)]
    record = CaseRecord(
        key=case.key,
        input_digests_after=[tensor_digest(t) for t in inputs],
        repeat_output_digests=[tensor_digest(t) for t in outputs],
    )
    return declaration, case, inputs, record, outputs


def _check(repeated_case, repeat) -> Errors:
    declaration, case, inputs, record, outputs = repeated_case
    errors = Errors()
    check = AccuracyCheck.on_inputs(declaration, inputs)
    _check_case(declaration, case, inputs, record, outputs, repeat, {}, errors, check)
    return errors


def test_an_identical_repeat_passes(repeated_case):
    outputs = repeated_case[4]
    assert _check(repeated_case, [t.clone() for t in outputs]).absolute == 0.0


def test_a_repeat_that_differs_within_the_contract_still_fails(repeated_case):
    repeat = [t.clone() for t in repeated_case[4]]
    repeat[0].view(-1).view(torch.int16)[0] += 1  # one unit in the last place of a bf16
    with pytest.raises(CaseFailure, match="two identical calls gave different outputs"):
        _check(repeated_case, repeat)


def test_a_wrong_repeat_is_held_to_the_contract(repeated_case):
    repeat = [torch.zeros_like(t) for t in repeated_case[4]]
    with pytest.raises(CaseFailure) as failure:
        _check(repeated_case, repeat)
    assert "different outputs" not in str(failure.value)


def _summary(got: torch.Tensor, expected: torch.Tensor) -> tuple[float, float]:
    """The error summary written the plain way: masked copies of the finite elements."""
    got64, expected64 = got.double(), expected.double()
    finite = torch.isfinite(got64) & torch.isfinite(expected64)
    if not bool(finite.any()):
        return 0.0, 0.0
    error = (got64 - expected64).abs()[finite]
    scale = expected64.abs()[finite].clamp_min(1e-12)
    return float(error.max()), float((error / scale).max())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64])
def test_the_error_summary_counts_only_finite_pairs(dtype):
    generator = torch.Generator().manual_seed(3)
    expected = torch.randn(64, generator=generator).to(dtype)
    got = (expected.double() + 1e-3 * torch.randn(64, generator=generator)).to(dtype)
    specials = [float("nan"), float("inf"), -float("inf"), 0.0]
    for index, value in enumerate(specials):
        got[index] = value
        expected[len(specials) + index] = value
    got[9] = expected[9] = float("inf")
    errors = Errors()
    errors.add(got, expected)
    assert (errors.absolute, errors.relative) == pytest.approx(_summary(got, expected), rel=0)
    nothing_finite = Errors()
    nothing_finite.add(torch.full((4,), float("nan"), dtype=dtype), expected[:4])
    assert (nothing_finite.absolute, nothing_finite.relative) == (0.0, 0.0)


def test_a_near_miss_beside_a_zero_reference_is_numerical_and_a_value_never_written_is_gross():
    """A failure's label decides whether a hidden workload's miss reads as hardcoding: an
    honest kernel off by a little more than the tolerance where the reference is near zero
    is a near miss; a value never computed is gross."""
    from gates.evaluator.diagnosis import mostly_gross

    expected = torch.tensor([-0.000167, 0.5, 1.0], dtype=torch.float32)
    near = expected.clone()
    near[0] = -0.00127  # 0.0011 off: 1.1x atol + rtol |ref|
    bad = torch.tensor([True, False, False])
    assert not mostly_gross(near, expected, bad)
    unwritten = expected.clone()
    unwritten[1:] = 0.0
    assert mostly_gross(unwritten, expected, torch.tensor([False, True, True]))
