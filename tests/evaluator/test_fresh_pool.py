"""The timing loop's input pool (CPU check of what CUDA timing relies on): every round's sets
are new, and a timed output is accepted only if it is the output for the set at hand."""

import random

from gates.evaluator.cases import plan_cases
from gates.evaluator.timing import FreshPool
from operators import REGISTRY

DECLARATION = REGISTRY.declaration("rms_norm")
WORKLOAD = DECLARATION.workloads[0]


def reference(*inputs, **params):
    return DECLARATION.reference(*inputs, **params)


def _pool(seed: int, wanted: int = 6) -> FreshPool:
    return FreshPool(DECLARATION, WORKLOAD, reference, random.Random(seed), wanted, "cpu")


def _first_values(inputs) -> tuple:
    return tuple(float(t.flatten()[0]) for t in inputs)


def test_every_set_is_new_to_the_cases_and_to_other_rounds():
    nonce = "a" * 32
    cases = plan_cases(DECLARATION, nonce, "cuda")  # the workloads at full size, as timed
    seen = {
        _first_values(DECLARATION.make_inputs(c.as_workload(), c.seed, c.distribution))
        for c in cases
        if c.workload == WORKLOAD.name
    }
    seeds = random.Random(nonce)
    rounds = [FreshPool(DECLARATION, WORKLOAD, reference, seeds, 6, "cpu") for _ in range(2)]
    drawn = [_first_values(inputs) for pool in rounds for inputs in pool.sets]
    assert len(drawn) == 12 and len(set(drawn)) == 12
    assert not seen & set(drawn)


def test_the_output_for_the_set_at_hand_passes_and_any_other_fails():
    pool = _pool(1)
    for index, inputs in enumerate(pool.sets):
        own = reference(*inputs, **DECLARATION.params)
        assert not bool(pool.mismatch(own, index, 0))
        other = pool.expected[(index + 1) % len(pool.sets)][0]
        assert bool(pool.mismatch(other, index, 0)), "a replayed output of another set passed"


def test_an_output_outside_twice_the_contract_fails():
    pool = _pool(2)
    want = pool.expected[0][0]
    bound = 2 * (DECLARATION.contract.atol + DECLARATION.contract.rtol * want.float().abs())
    near = (want.float() + 0.5 * bound).to(want.dtype)
    far = want.float().clone()
    far.view(-1)[7] += 4 * bound.view(-1)[7]
    nan = want.clone()
    nan.view(-1)[3] = float("nan")
    assert not bool(pool.mismatch(near, 0, 0))
    assert bool(pool.mismatch(far.to(want.dtype), 0, 0))
    assert bool(pool.mismatch(nan, 0, 0)), "a NaN passed"
    assert bool(pool.mismatch(want.float(), 0, 0)), "a wider dtype passed"
    assert bool(pool.mismatch(want[:1], 0, 0)), "a wrong shape passed"
    assert bool(pool.mismatch(want.to("meta"), 0, 0)), "an output on another device passed"


def test_a_large_workload_reuses_fewer_sets_within_the_memory_budget(monkeypatch):
    import gates.evaluator.timing as timing

    monkeypatch.setattr(timing, "POOL_BYTES", 1)
    assert len(_pool(3, wanted=200).sets) == 2
