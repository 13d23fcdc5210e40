"""The candidate worker inside the Landlock fence (defence in depth): no network, writes only
to the evaluation's own folders and the Triton cache, reads only the repository, the task,
the solution and the system and Python paths. What the in-process detectors see stays the
same; the fence stops what they could only report after the fact (a socket to a helper
process, a file written outside the evaluation, a read of the controller's other files).
"""

import sys
from pathlib import Path

from gates.errors import GateError
from gates.evaluator.launcher import (
    EXIT_BAD_INPUT,
    REPOSITORY_ROOT,
    ReportNotAuthentic,
    WorkerCrashed,
    WorkerTimeout,
)
from gates.evaluator.protocol import CandidateReport, EvaluationRequest
from gates.fenced_python import fenced_python


def run_fenced_candidate(
    request: EvaluationRequest, request_path: Path, timeout: float
) -> CandidateReport:
    """Run the candidate phase under Landlock; raises like `finish_worker` does."""
    from sandbox import FencePolicy, get_fence

    fence = get_fence("landlock")  # fail closed: a FenceError says why it cannot be enforced
    work, sources = Path(request.work_dir), Path(request.sources_dir)
    report_path = work / "candidate-report.json"
    python = fenced_python(request.device)
    readable = {*python.readable, Path(request.task), Path(request.solution)}
    if request.incumbent:
        readable.add(Path(request.incumbent))
    policy = FencePolicy(
        workspace=work,
        readable=tuple(sorted(path.resolve() for path in readable)),
        writable=(sources, python.triton_cache),
        env_values=python.environment,
        gpu=request.device == "cuda",
        timeout_s=timeout,
    )
    command = [sys.executable, "-m", "gates.evaluator.worker", "candidate", str(request_path)]
    result = fence.run([*command, str(report_path)], policy, cwd=REPOSITORY_ROOT)
    if result.timed_out:
        raise WorkerTimeout(f"candidate phase exceeded {timeout:g} s")
    if result.returncode == EXIT_BAD_INPUT:
        raise GateError(_last_line(result.stderr) or "candidate worker refused its input")
    if result.returncode != 0 or not report_path.is_file():
        last = _last_line(result.stderr + result.stdout)
        raise WorkerCrashed(f"candidate worker exited with code {result.returncode}: {last}")
    report = CandidateReport.model_validate_json(report_path.read_text())
    for field in ("nonce", "task_digest", "solution_digest"):
        if getattr(report, field) != getattr(request, field):
            raise ReportNotAuthentic(f"candidate report does not echo the request's {field}")
    return report


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
