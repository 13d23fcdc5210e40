"""On a CUDA device: the baseline passes with latency, an A/A comparison never promotes, and
the timing-only cheats (side stream, timer patch, implausible speed) are rejected."""

import pytest
from cheat_packing import cheat_solution

GPU_CHEATS = {
    "side_stream": {"concurrency", "plausibility"},
    "timer_patch": {"tampering"},
    "implausible_speed": {"plausibility", "concurrency", "output_replay"},
}


@pytest.mark.gpu
def test_baseline_passes_with_latency_and_does_not_promote_over_itself(task_root):
    from gates.evaluator.evaluation import evaluate

    result = evaluate(task_root / "rms_norm", task_root / "rms_norm" / "solution", device="cuda")
    assert result.status == "PASSED", result.reason
    assert result.timing and result.timing["samples_per_role"] >= 1000
    for row in result.timing["workloads"].values():
        assert row["candidate_median_us"] > row["floor_us"]
    assert result.timing["promotion"]["promoted"] is False


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GPU_CHEATS))
def test_timing_cheats_are_rejected_on_cuda(name, task_root, tmp_path):
    from gates.evaluator.evaluation import evaluate

    solution = cheat_solution(name, tmp_path)
    result = evaluate(task_root / "rms_norm", solution, device="cuda")
    assert result.status == "REJECTED", f"{name}: {result.status} {result.reason}"
    assert result.detector in GPU_CHEATS[name], result.reason
