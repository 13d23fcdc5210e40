"""The timed-output screen passes the exact answer and still refuses what it screens for. An
operator whose output cancels two large terms that its eager baseline rounds apart (as a rotary
embedding's does) errs there by a share of the terms, not of the output: the screen of 2^-6 of
|baseline| + RMS alone refused the exact answer rounded once, which is what `torch.compile`
computes. The baseline's own largest error, added to the screen, lets it pass; an output of
another set, a dropped term, zeros, or one element pushed past the allowance still fail, and so
does an answer rounded through FP8 where the baseline errs as BF16 rounding does."""

import sys

import torch

import gates.evaluator.fresh_pool as fresh_pool
from gates.evaluator.detectors.identity_snapshot import IdentitySnapshot
from gates.evaluator.detectors.tampering import WATCHED_CLASSES
from gates.evaluator.fresh_pool import SCREEN, FreshPool
from gates.evaluator.watched_scope import is_watched
from operators import REGISTRY
from operators.accuracy import AccuracyCheck
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload
from operators.fp64_oracle import Float64Everywhere, fp64_outputs


def cancelling_terms(x, y):
    """(x + 4y) - 4y in eager BF16: the sum rounded at the large term's scale, then the large
    term taken away again; the exact answer is x."""
    large = y * 4
    return (x + large) - large


DECLARATION = OperatorDeclaration(
    name="cancelling_terms",
    summary="a large term added and taken away",
    axes=(Axis(name="rows", kind="var"), Axis(name="cols", kind="const", value=256)),
    inputs=tuple(TensorSpec(name=name, shape=("rows", "cols")) for name in "xy"),
    outputs=(TensorSpec(name="out", shape=("rows", "cols")),),
    reference=cancelling_terms,
    contract=Contract(mode="no_less_accurate", roundings=1, reason="one rounding of the result"),
    workloads=(Workload(name="wide", axes={"rows": 512}),),
)
WORKLOAD = DECLARATION.workloads[0]


def _pool(seed: int = 3) -> FreshPool:
    return FreshPool(DECLARATION, WORKLOAD, cancelling_terms, (seed, seed + 1), 4, "cpu")


def _exact(inputs) -> torch.Tensor:
    """The FP64 answer rounded once to BF16: the most accurate output there is."""
    return fp64_outputs(cancelling_terms, inputs, {})[0].to(torch.bfloat16)


def test_the_exact_answer_was_past_the_plain_screen_and_passes_now():
    pool = _pool()
    for index, inputs in enumerate(pool.sets):
        exact = _exact(inputs)
        want = pool.expected[index][0].float()
        plain = SCREEN * (want.abs() + want.square().mean().sqrt())
        past = (exact.float() - want).abs() > plain
        assert past.any(), "no element cancels: the test lost its point"
        assert AccuracyCheck.on_inputs(DECLARATION, inputs).violation([exact]) is None
        assert not bool(pool.mismatch(exact, index, 0)), f"set {index}: the exact answer failed"


def test_the_allowance_is_twice_the_baselines_largest_error_and_small_beside_the_output():
    pool = _pool()
    want = pool.expected[0][0].double()
    exact = fp64_outputs(cancelling_terms, pool.sets[0], {})[0]
    assert pool.allowances[0] == 2.0 * (want - exact).abs().max().item()
    assert 0 < pool.allowances[0] < 0.2 * want.square().mean().sqrt().item()


def test_outputs_the_screen_is_for_still_fail():
    pool = _pool()
    x, y = pool.sets[0]
    exact = _exact(pool.sets[0])
    pushed = exact.float().clone()
    pushed.view(-1)[11] += 3 * pool.allowances[0]
    wrong = {
        "another set's output": pool.expected[1][0],
        "a dropped term": (x + y * 4).to(torch.bfloat16),
        "zeros": torch.zeros_like(exact),
        "one element past the allowance": pushed.to(torch.bfloat16),
    }
    for name, output in wrong.items():
        assert bool(pool.mismatch(output, 0, 0)), f"{name} passed the screen"


def test_a_bit_exact_contract_gets_no_allowance():
    exact = DECLARATION.model_copy(
        update={"contract": Contract(mode="bit_exact", reason="eager's three roundings")}
    )
    pool = FreshPool(exact, WORKLOAD, cancelling_terms, (5, 6), 2, "cpu")
    assert pool.allowances == [0.0]
    assert bool(pool.mismatch(_exact(pool.sets[0]), 0, 0)), "a bit-exact contract took a near miss"


def test_an_answer_rounded_through_fp8_fails_where_the_baseline_errs_as_bf16_does():
    """rms_norm's baseline errs by BF16's rounding: FP8's 2^-4 is far past its allowance."""
    declaration = REGISTRY.declaration("rms_norm")
    workload = declaration.workloads[-1]
    pool = FreshPool(declaration, workload, declaration.preferred, (7, 8), 2, "cpu")
    exact = fp64_outputs(declaration.reference, pool.sets[0], declaration.params)[0]
    assert not bool(pool.mismatch(exact.to(torch.bfloat16), 0, 0))
    through_fp8 = exact.to(torch.float8_e4m3fn).to(torch.bfloat16)
    assert bool(pool.mismatch(through_fp8, 0, 0)), "an FP8 answer passed the screen"


def test_widening_the_allowance_from_the_candidates_process_is_seen(monkeypatch):
    """The allowance is computed in the process the candidate runs in, from the evaluator's own
    modules: a candidate that scales it up, or bends the FP64 oracle that measures the
    baseline's error, replaces something the guard's evaluator snapshot watches."""
    watched = [module for name, module in sorted(sys.modules.items()) if is_watched(name)]
    snapshot = IdentitySnapshot((), watched, WATCHED_CLASSES)
    assert snapshot.changed() == []
    monkeypatch.setattr(fresh_pool, "ALLOWANCE_MARGIN", 1e9)
    monkeypatch.setattr(Float64Everywhere, "__torch_dispatch__", lambda *args, **kwargs: None)
    changed = snapshot.changed()
    assert "gates.evaluator.fresh_pool.ALLOWANCE_MARGIN" in changed
    assert "operators.fp64_oracle.Float64Everywhere.__torch_dispatch__" in changed
