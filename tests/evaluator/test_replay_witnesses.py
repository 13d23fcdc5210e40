"""Replay witnesses on the CPU (the CUDA run is `pool_bounds` in `test_evaluator_gpu.py`):
the candidate process witnesses exactly the wanted number of the candidate's replays per
figure and no other role's, and the judge, drawing each witnessed set again from the nonce,
passes right outputs and rejects wrong ones, outputs of another set, a witness under another
nonce, and a timed workload without a witness."""

import pytest
import torch

from gates.evaluator.detectors.replay import TimedOutputWrong
from gates.evaluator.fresh_pool import FreshPool, drawn_sets, pool_seeds
from gates.evaluator.graph_timing import SECONDARY_EVERY, figure_replays
from gates.evaluator.judge import CaseFailure, Errors, check_witnesses
from gates.evaluator.replay_witnesses import MAX_WITNESSES, WitnessLog
from operators import REGISTRY
from operators.accuracy import AccuracyCheck

DECLARATION = REGISTRY.declaration("rms_norm")
WORKLOAD = DECLARATION.workloads[0]
NONCE = "b" * 32


def reference(*inputs, **params):
    return DECLARATION.reference(*inputs, **params)


def _pool(wanted: int = 8) -> FreshPool:
    seeds = pool_seeds(NONCE, WORKLOAD.name, 0)
    return FreshPool(DECLARATION, WORKLOAD, reference, seeds, wanted, "cpu")


def _replays(pool, log, replays, compute, calls=3, figure="warm"):
    """Drive the witness hook as graph timing does: every role's replay, then the hook."""
    witness = log.for_workload(WORKLOAD.name, pool, figure_replays(replays, figure))
    other = "cold" if figure == "warm" else "warm"
    for replay in range(replays):
        sampled = {figure} if replay % SECONDARY_EVERY else {figure, other}
        for role in ("baseline", "candidate"):
            for name in sorted(sampled):
                chosen = [(replay * calls + call) % len(pool.sets) for call in range(calls)]
                outputs = [compute(pool.sets[index], index) for index in chosen]
                witness(role, name, outputs, chosen)


def _right(inputs, index):
    return DECLARATION.run_reference(*inputs)


def _judged(log, pool_outputs=None, nonce=NONCE, workloads=None):
    check_witnesses(
        nonce, DECLARATION, log.records, workloads or [WORKLOAD.name],
        pool_outputs if pool_outputs is not None else log.outputs, "cpu", Errors(),
    )  # fmt: skip


def test_exactly_the_wanted_replays_of_the_candidate_are_witnessed_per_figure():
    pool, log = _pool(), WitnessLog()
    replays = MAX_WITNESSES * SECONDARY_EVERY
    _replays(pool, log, replays, _right, calls=2)
    by_figure = {}
    for record in log.records:
        by_figure[record.figure] = by_figure.get(record.figure, 0) + 1
        assert record.workload == WORKLOAD.name and record.pool_sets == len(pool.sets)
    assert by_figure == {"warm": MAX_WITNESSES, "cold": MAX_WITNESSES}
    assert set(log.outputs) == {record.key for record in log.records}


def test_large_outputs_are_witnessed_fewer_times(monkeypatch):
    import gates.evaluator.replay_witnesses as replay_witnesses

    pool, log = _pool(), WitnessLog()
    output_bytes = sum(t.numel() * t.element_size() for t in pool.expected[0])
    monkeypatch.setattr(replay_witnesses, "WITNESS_BYTES", output_bytes)
    _replays(pool, log, 2 * SECONDARY_EVERY, _right)
    assert len(log.records) == 2  # one per figure, never none


def test_a_witness_is_the_output_of_the_set_it_names():
    pool, log = _pool(), WitnessLog()
    _replays(pool, log, 2 * SECONDARY_EVERY, _right)
    for record in log.records:
        expected = pool.expected[record.set_index]
        assert all(
            torch.equal(got, want)
            for got, want in zip(log.outputs[record.key], expected, strict=True)
        )


def test_the_judge_draws_the_pool_again_bit_for_bit():
    pool = _pool()
    again = drawn_sets(DECLARATION, WORKLOAD, pool.seeds, len(pool.sets), "cpu")
    assert len(again) == len(pool.sets)
    for mine, theirs in zip(pool.sets, again, strict=True):
        assert all(torch.equal(a, b) for a, b in zip(mine, theirs, strict=True))


def test_right_witnesses_pass_the_judge():
    pool, log = _pool(), WitnessLog()
    _replays(pool, log, 2 * SECONDARY_EVERY, _right)
    _judged(log)


def test_outputs_wrong_only_in_replays_are_rejected_by_the_judge():
    """The replay's own comparison was hidden from (its bounds widened in device memory):
    the candidate copies its input instead of normalising it."""
    pool, log = _pool(), WitnessLog()
    _replays(pool, log, 2 * SECONDARY_EVERY, lambda inputs, index: (inputs[0].clone(),))
    with pytest.raises(TimedOutputWrong, match="drew the set again"):
        _judged(log)


def test_a_near_miss_in_a_replay_is_a_numerical_error_not_a_cheat():
    pool, log = _pool(), WitnessLog()

    def near(inputs, index):
        (out,) = _right(inputs, index)
        allowed = AccuracyCheck.on_inputs(DECLARATION, list(inputs)).bounds[0].max_abs
        nudged = out.double().clone()
        largest = int(nudged.abs().argmax())  # off by a few allowances, far from grossly
        nudged.view(-1)[largest] += 3 * allowed
        return (nudged.to(out.dtype),)

    _replays(pool, log, 2 * SECONDARY_EVERY, near)
    with pytest.raises(CaseFailure) as failure:
        _judged(log)
    assert failure.value.status == "INCORRECT_NUMERICAL" and not failure.value.gross


def test_outputs_of_another_set_are_rejected():
    pool, log = _pool(), WitnessLog()
    shifted = len(pool.sets)
    _replays(
        pool,
        log,
        2 * SECONDARY_EVERY,
        lambda inputs, index: _right(pool.sets[(index + 1) % shifted], 0),
    )
    with pytest.raises(TimedOutputWrong):
        _judged(log)


def test_a_witness_judged_under_another_nonce_is_rejected():
    pool, log = _pool(), WitnessLog()
    _replays(pool, log, 2 * SECONDARY_EVERY, _right)
    with pytest.raises(TimedOutputWrong):
        _judged(log, nonce="c" * 32)


def test_a_timed_workload_without_a_witness_is_rejected():
    pool, log = _pool(), WitnessLog()
    _replays(pool, log, 2 * SECONDARY_EVERY, _right)
    with pytest.raises(TimedOutputWrong, match="no replayed outputs of prefix_b1"):
        _judged(log, workloads=[WORKLOAD.name, "prefix_b1"])
    with pytest.raises(TimedOutputWrong, match="names no timed call"):
        _judged(log, pool_outputs={})


def test_an_eager_witness_is_judged_on_its_own_round_s_pool():
    """The eager loop draws a pool per round: a witness names its round, and the judge
    draws that round's pool (a witness judged on another round's pool fails)."""
    first = _pool()
    later = FreshPool(
        DECLARATION, WORKLOAD, reference, pool_seeds(NONCE, WORKLOAD.name, 3), 8, "cpu"
    )
    log = WitnessLog()
    witness = log.for_workload(WORKLOAD.name, first, {"eager": 4})
    witness.next_round(later, 3)
    for index in range(4):
        witness("candidate", "eager", [_right(later.sets[index], index)], [index])
    assert [record.round_index for record in log.records] == [3] * 4
    _judged(log)
    log.records = [record.model_copy(update={"round_index": 0}) for record in log.records]
    with pytest.raises(TimedOutputWrong):
        _judged(log)
