"""The timing loop's input pool (CPU check of what CUDA timing relies on): every round's sets
are new, and a timed output is accepted only if it is the output for the set at hand."""

import torch

from gates.evaluator.cases import plan_cases
from gates.evaluator.fresh_pool import SCREEN, FreshPool, pool_seeds
from operators import REGISTRY

DECLARATION = REGISTRY.declaration("rms_norm")
WORKLOAD = DECLARATION.workloads[0]


def reference(*inputs, **params):
    return DECLARATION.reference(*inputs, **params)


def _pool(seed: int, wanted: int = 6) -> FreshPool:
    return FreshPool(DECLARATION, WORKLOAD, reference, (seed, seed + 1), wanted, "cpu")


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
    rounds = [
        FreshPool(DECLARATION, WORKLOAD, reference, pool_seeds(nonce, WORKLOAD.name, r), 6, "cpu")
        for r in range(2)
    ]
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


def test_an_output_outside_the_screen_fails():
    pool = _pool(2)
    want = pool.expected[0][0]
    rms = want.float().square().mean().sqrt()
    bound = SCREEN * (want.float().abs() + rms) + pool.allowances[0]
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
    import gates.evaluator.fresh_pool as fresh_pool

    monkeypatch.setattr(fresh_pool, "POOL_BYTES", 1)
    assert len(_pool(3, wanted=200).sets) == 2


def test_a_replay_is_checked_in_one_comparison_that_counts_each_wrong_call():
    pool = _pool(7)
    pool.stack_checks()
    chosen = [3, 0, 5, 1]
    outputs = [tuple(t.clone() for t in pool.expected[index]) for index in chosen]
    assert int(pool.batch_mismatch(outputs, chosen)) == 0
    outputs[1][0][0, 0] = float("nan")
    outputs[2][0].mul_(1.5)
    assert int(pool.batch_mismatch(outputs, chosen)) == 2
    swapped = [outputs[0], outputs[3], outputs[2], outputs[1]]  # right values, wrong sets
    assert int(pool.batch_mismatch(swapped, chosen)) >= 3
    assert int(pool.batch_mismatch([(None,)] * 4, chosen)) == 4


class Answering(torch.Tensor):
    """A tensor subclass, which could answer the comparison itself."""


def test_a_replay_whose_outputs_are_not_plain_tensors_counts_every_call_at_every_replay():
    pool = _pool(7)
    pool.stack_checks()
    chosen = [3, 0, 5, 1]
    outputs = [tuple(t.clone() for t in pool.expected[index]) for index in chosen]
    outputs[2] = tuple(t.as_subclass(Answering) for t in outputs[2])
    for _ in range(2):  # the list is judged once, and its verdict holds at the next replay
        assert int(pool.batch_mismatch(outputs, chosen)) == 4
    assert int(pool.batch_mismatch(outputs[:1] * 4, [3] * 4)) == 0
