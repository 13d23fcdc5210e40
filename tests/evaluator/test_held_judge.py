"""The judge starts beside the candidate but holds: it reads nothing the candidate writes
and writes no report until the controller releases it, and a cancelled judge just ends (a
forked judge and a fresh one alike)."""

import secrets
import time
from pathlib import Path

import pytest

from gates.evaluator.launcher import WorkerCrashed, finish_worker, start_worker
from gates.evaluator.protocol import EvaluationRequest, JudgeReport, write_json_atomic
from gates.tasks.package import load_task
from gates.tasks.solution import load_solution


def _request(task_root: Path, work: Path) -> tuple[EvaluationRequest, Path]:
    folder = task_root / "rms_norm"
    request = EvaluationRequest(
        nonce=secrets.token_hex(16),
        task=str(folder),
        task_digest=load_task(folder).digest,
        solution=str(folder / "solution"),
        solution_digest=load_solution(folder / "solution").digest(),
        device="cpu",
        work_dir=str(work),
        sources_dir=str(work / "sources"),
    )
    path = work / "request.json"
    write_json_atomic(path, request)
    return request, path


def test_a_held_judge_waits_and_a_cancelled_one_writes_nothing(start_method, task_root, tmp_path):
    request, path = _request(task_root, tmp_path)
    candidate_report = tmp_path / "candidate-report.json"
    judge = start_worker("judge", request, path, (str(candidate_report),), held=True)
    time.sleep(3)
    assert judge.process.poll() is None, "a held judge must wait for its release"
    assert not judge.report_path.exists()
    judge.cancel()
    assert judge.process.poll() is not None
    assert not judge.report_path.exists()


def test_a_released_judge_reads_the_candidate_report_only_then(start_method, task_root, tmp_path):
    request, path = _request(task_root, tmp_path)
    missing = tmp_path / "candidate-report.json"
    judge = start_worker("judge", request, path, (str(missing),), held=True)
    with pytest.raises(WorkerCrashed):  # released with no candidate report: it fails then
        finish_worker(judge, request, JudgeReport, timeout=120)
