"""Evaluate one solution on one task package: candidate process, then judge process.

The controller (this module) checks its inputs, writes the request with a fresh nonce,
runs the two workers, and folds their reports into one `EvaluationResult`.
"""

import logging
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from gates.errors import GateError
from gates.evaluator.detectors.environment_probes import (
    EnvironmentInspection,
    source_inspection,
    source_probes,
)
from gates.evaluator.detectors.file_tampering import (
    SourceSnapshot,
    SourcesRewritten,
    protected_roots,
)
from gates.evaluator.detectors.table import family_of, finding_of
from gates.evaluator.launcher import (
    REPOSITORY_ROOT,
    ReportNotAuthentic,
    WorkerCrashed,
    WorkerTimeout,
    finish_worker,
    start_worker,
)
from gates.evaluator.model_weights import model_weights
from gates.evaluator.promotion import promotion_verdict
from gates.evaluator.protocol import (
    CandidateReport,
    EvaluationRequest,
    EvaluationResult,
    Finding,
    JudgeReport,
    write_json_atomic,
)
from gates.evaluator.results import TimingReport, WorkloadWeight
from gates.tasks.captured import LAYOUTS_FILE, captured_package_is_current
from gates.tasks.generation import render_package
from gates.tasks.package import digest_files, load_task
from gates.tasks.solution import load_solution

DEFAULT_TIMEOUT = 300.0

# The controller shows these records as progress lines (controller/runs/progress.py).
PROGRESS = logging.getLogger("kernel_controller.progress")


def evaluate(
    task_folder: Path,
    solution_path: Path,
    device: str = "cpu",
    timeout: float = DEFAULT_TIMEOUT,
    incumbent: Path | None = None,
    timing_samples: int = 1000,
    timing_rounds: int = 5,
    fence: str = "none",
    judged_as: str = "candidate",
) -> EvaluationResult:
    """Evaluate `solution_path` on the task in `task_folder`; bad input raises GateError.
    `fence="landlock"` runs the candidate worker inside the Landlock fence; `judged_as=
    "baseline"` judges the task's own production kernel (preflight) by its numerics and timing
    only (`EvaluationRequest.judged_as`)."""
    started = time.monotonic()
    task = load_task(Path(task_folder))
    solution = load_solution(Path(solution_path))
    if solution.definition != task.definition.name:
        raise GateError(
            f"solution is for {solution.definition!r}, the task is {task.definition.name!r}"
        )
    declaration = _check_task_is_current(task)
    weights = model_weights(task.folder, declaration)
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise GateError("--device cuda was asked for but no CUDA device is available")
    if incumbent is not None:
        load_solution(Path(incumbent))
    work = Path(tempfile.mkdtemp(prefix="controller-eval-"))
    sources = Path(tempfile.mkdtemp())  # a neutral path: the solution sees it as __file__
    try:
        request = EvaluationRequest(
            nonce=secrets.token_hex(16),
            task=str(Path(task_folder).resolve()),
            task_digest=task.digest,
            solution=str(Path(solution_path).resolve()),
            solution_digest=solution.digest(),
            incumbent=str(Path(incumbent).resolve()) if incumbent else None,
            device=device,
            work_dir=str(work),
            sources_dir=str(sources),
            timing_samples=timing_samples,
            timing_rounds=timing_rounds,
            fence=fence,
            judged_as=judged_as,
        )
        request_path = work / "request.json"
        write_json_atomic(request_path, request)
        snapshot = SourceSnapshot(
            protected_roots(REPOSITORY_ROOT, Path(task_folder), Path(solution_path))
        )
        spelled = spelled_probes(task, solution)
        outcome = _run_phases(request, request_path, timeout, weights, spelled)
        try:
            snapshot.check()
        except SourcesRewritten as cheat:
            outcome = _rejected(family_of(type(cheat)), type(cheat).__name__, cheat.reason)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(sources, ignore_errors=True)
    return EvaluationResult(
        task=str(task_folder),
        operator=task.definition.name,
        solution=solution.name,
        device=device,
        seconds=round(time.monotonic() - started, 2),
        **outcome,
    )


def spelled_probes(task, solution) -> EnvironmentInspection | None:
    """The reads of where or when it runs that the solution's sources spell, found in this
    process, which never runs the solution: whatever the solution does in the processes it
    runs in (erasing what they noted, say) cannot change this finding. The candidate process
    adds the calls its tripwires recorded."""
    texts = {source.path: source.content for source in solution.sources}
    known = {source.path: source.content for source in task.baseline.sources}
    return source_inspection(source_probes(texts, known))


def _run_phases(
    request: EvaluationRequest,
    request_path: Path,
    timeout: float,
    weights: dict,
    spelled: EnvironmentInspection | None,
) -> dict:
    """Candidate first; the judge starts beside it, held, so its imports cost no wall time.
    `weights` (calls per forward by workload) weigh the promotion's model time; `spelled` (the
    sources' reads of where or when they run) rejects, after the candidate's recorded calls,
    a run every other check passed."""
    started = time.monotonic()
    report_file = Path(request.work_dir) / "candidate-report.json"
    judge_worker = start_worker("judge", request, request_path, (str(report_file),), held=True)
    try:
        PROGRESS.info("evaluator: candidate process running the solution")
        outcome, candidate = _run_candidate(request, request_path, timeout)
        if outcome is not None:
            PROGRESS.info("evaluator: candidate stopped: %s", outcome["status"])
            return outcome
        candidate_seconds = time.monotonic() - started
        PROGRESS.info("evaluator: candidate ran in %.1f s; judging its outputs", candidate_seconds)
        try:
            judge = finish_worker(judge_worker, request, JudgeReport, timeout)
        except WorkerTimeout as error:
            return {"status": "TIMEOUT", "reason": f"judging: {error}"}
        except (WorkerCrashed, ReportNotAuthentic) as error:
            return {"status": "EVALUATOR_ERROR", "reason": f"the judge failed: {error}"}
    finally:
        judge_worker.cancel()
    PROGRESS.info("evaluator: judged %s in %.1f s", judge.status, time.monotonic() - started)
    outcome = {
        "status": judge.status,
        "reason": judge.reason,
        "findings": judge.findings,
        "detector": judge.findings[0].detector if judge.findings else None,
        "cases_checked": judge.cases_checked,
        "max_absolute_error": judge.max_absolute_error,
        "max_relative_error": judge.max_relative_error,
        "phase_seconds": {
            "candidate_process": round(candidate_seconds, 3),
            **{f"candidate_{name}": seconds for name, seconds in candidate.phase_seconds.items()},
            "judge_after_candidate": round(time.monotonic() - started - candidate_seconds, 3),
            **{f"judge_{name}": seconds for name, seconds in judge.phase_seconds.items()},
        },
    }
    outcome["integrity"] = candidate.integrity
    outcome["notes"] = candidate.notes
    outcome["library_calls"] = candidate.library_calls
    last_findings = [*candidate.last_findings, *([finding_of(spelled)] if spelled else [])]
    if judge.status == "PASSED" and last_findings:
        first = last_findings[0]
        outcome.update(_rejected(first.detector, first.cheat, first.reason))
        outcome["findings"] = last_findings
        return outcome
    if judge.status == "PASSED" and candidate.timing is not None:
        outcome["timing"] = decided_promotion(candidate.timing, bool(request.incumbent), weights)
    return outcome


def decided_promotion(
    timing: TimingReport, incumbent: bool, weights: dict[str, WorkloadWeight] | None = None
) -> TimingReport:
    """The timing with its promotion verdict made again, in this process, with its
    thresholds and the task's calls per forward (`model_weights`): the candidate process
    shares its interpreter with the solution, so its verdict and the numbers its rule read
    are not trusted; only the paired times it measured are."""
    roles = ["candidate", "baseline", *(["incumbent"] if incumbent else [])]
    verdict = promotion_verdict(timing, roles, weights=weights)
    return timing.model_copy(update={"promotion": verdict})


def _run_candidate(request, request_path, timeout) -> tuple[dict | None, CandidateReport | None]:
    """The candidate phase; an outcome when it already decides the evaluation."""
    try:
        if request.fence == "landlock":
            candidate = _fenced_candidate(request, request_path, timeout)
        else:
            worker = start_worker("candidate", request, request_path)
            candidate = finish_worker(worker, request, CandidateReport, timeout)
    except WorkerTimeout as error:
        return {"status": "TIMEOUT", "reason": str(error)}, None
    except WorkerCrashed as error:
        return {"status": "RUNTIME_ERROR", "reason": str(error)}, None
    except ReportNotAuthentic as error:
        return _rejected("report_authenticity", "ReportNotAuthentic", str(error)), None
    if candidate.status == "RAN":
        return None, candidate
    outcome = {
        "status": candidate.status,
        "reason": candidate.reason,
        "integrity": candidate.integrity,
        "notes": candidate.notes,
    }
    if candidate.findings:
        outcome["findings"] = candidate.findings
        outcome["detector"] = candidate.findings[0].detector
    return outcome, candidate


def _fenced_candidate(request, request_path, timeout) -> CandidateReport:
    """The candidate phase under Landlock; a fence that cannot be enforced is bad input."""
    from gates.evaluator.fenced_candidate import run_fenced_candidate
    from sandbox import FenceError

    try:
        return run_fenced_candidate(request, request_path, timeout)
    except FenceError as error:
        raise GateError(f"--fence landlock: {error}") from None


def _rejected(detector: str, cheat: str, reason: str) -> dict:
    finding = Finding(detector=detector, cheat=cheat, reason=reason)
    return {
        "status": "REJECTED",
        "reason": f"{detector}: {reason}",
        "findings": [finding],
        "detector": detector,
    }


def _check_task_is_current(task):
    """Refuse a package that no longer matches the registered operator it names; returns
    the operator's declaration."""
    from operators import REGISTRY

    if task.definition.name not in REGISTRY:
        raise GateError(f"task {task.definition.name!r} names no registered operator")
    declaration = REGISTRY.declaration(task.definition.name)
    if (task.folder / LAYOUTS_FILE).is_file():
        stale = not captured_package_is_current(task, declaration)
    else:
        stale = digest_files(render_package(declaration)) != task.digest
    if stale:
        raise GateError(
            f"task package {task.folder} is stale (the operator changed); regenerate it with "
            "`controller generate --force`"
        )
    return declaration
