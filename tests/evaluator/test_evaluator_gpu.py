"""On a CUDA device: the baseline passes with latency, an A/A comparison never promotes, the
timing-only cheats (side stream, timer patch, implausible speed, PyTorch only once the cases
are over, a foreign kernel in every capture but the first, a contract widened in the
registry, a baseline made slower through its private state, a kernel launched to overlap the
one before it without waiting for it) are rejected, one that waits first passes, wrong replayed
outputs hidden from the comparison in the candidate's process are caught by the judge, and
remembered outputs buy no speed."""

import pytest
from cheat_packing import cheat_solution

GPU_CHEATS = {
    "side_stream": {"concurrency", "plausibility"},
    "timer_patch": {"tampering"},
    "implausible_speed": {"plausibility", "concurrency", "output_replay", "call_state"},
    "late_fallback": {"compute_fallback", "cuda_graph", "call_state"},
    "late_foreign_kernel": {"cuda_graph"},
    "contract_widen": {"tampering", "output_replay"},
    "baseline_binding": {"tampering"},
    "early_reader": {"dependent_launch"},
    "hidden_early_reader": {"dependent_launch"},
}


@pytest.mark.gpu
def test_baseline_passes_with_latency_and_does_not_promote_over_itself(task_root):
    from gates.evaluator.evaluation import evaluate

    result = evaluate(task_root / "rms_norm", task_root / "rms_norm" / "solution", device="cuda")
    assert result.status == "PASSED", result.reason
    assert result.timing and result.timing.samples_per_role >= 1000
    assert result.integrity == "graph" and result.timing.cuda_graphs
    for row in result.timing.workloads.values():
        assert row.method == "graph" and row.candidate_cold_us > row.floor_us
    assert result.timing.promotion.promoted is False


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GPU_CHEATS))
def test_timing_cheats_are_rejected_on_cuda(name, task_root, tmp_path):
    from gates.evaluator.evaluation import evaluate

    solution = cheat_solution(name, tmp_path)
    result = evaluate(task_root / "rms_norm", solution, device="cuda")
    assert result.status == "REJECTED", f"{name}: {result.status} {result.reason}"
    assert result.detector in GPU_CHEATS[name], result.reason


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["pool_bounds", "pool_bounds_eager"])
def test_wrong_timed_outputs_hidden_from_the_comparison_in_the_candidate_process_fail_the_judge(
    name, task_root, tmp_path
):
    """The fixtures widen the timed comparison's bounds to infinity through raw device
    addresses, then return copies of their input, in replayed graphs or (not capturable)
    in eager calls: only the judge's witnesses can see it."""
    from gates.evaluator.evaluation import evaluate

    result = evaluate(task_root / "rms_norm", cheat_solution(name, tmp_path), "cuda")
    assert result.status == "REJECTED", f"{result.status} {result.reason}"
    assert result.detector == "output_replay", result.reason
    assert "drew the set again" in result.reason, result.reason
    assert result.integrity == ("graph" if name == "pool_bounds" else "traced"), result.notes


@pytest.mark.gpu
def test_remembered_outputs_buy_no_speed_on_cuda(task_root, tmp_path):
    """`value_memo` replays a remembered output whenever two input values match a call it has
    seen, and takes a slow path (tens of microseconds) otherwise. Timed on the input sets of
    the correctness cases it would replay at copy speed; with a fresh pool of inputs for every
    round it must take the slow path (or be caught replaying a wrong output, or keeping its
    table as state that changes from call to call)."""
    from gates.evaluator.evaluation import evaluate

    result = evaluate(task_root / "rms_norm", cheat_solution("value_memo", tmp_path), "cuda")
    if result.status == "REJECTED":  # its table of remembered outputs is state across calls
        assert result.detector in {"output_replay", "call_state"}, result.reason
        return
    assert result.status == "PASSED", result.reason
    for name, row in result.timing.workloads.items():
        assert row.candidate_median_us > 5 * row.baseline_median_us, (name, row)
        assert row.fresh_sets_per_round >= 2, (name, row)
    assert result.timing.promotion.promoted is False


@pytest.mark.gpu
def test_a_dependent_launch_that_waits_for_its_predecessor_first_passes(task_root, tmp_path):
    """The dependent-launch rule refuses kernels that read before they wait, not the launch
    mode: `awaited_launch` waits first and must pass."""
    from gates.evaluator.evaluation import evaluate

    result = evaluate(task_root / "rms_norm", cheat_solution("awaited_launch", tmp_path), "cuda")
    assert result.status == "PASSED", f"{result.status} {result.reason}"
