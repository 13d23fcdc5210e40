"""The controller's side of the process boundary: start a worker in its own process group,
kill the group on timeout, and accept only a report that echoes the request.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from gates.errors import GateError
from gates.evaluator.protocol import EvaluationRequest

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent.parent
EXIT_BAD_INPUT = 3
HOLD_VARIABLE = "CONTROLLER_WORKER_HELD"


class WorkerTimeout(Exception):
    """The worker ran past its time limit and was killed with its process group."""


class WorkerCrashed(Exception):
    """The worker ended without writing a report (crash, os._exit, signal)."""


class ReportNotAuthentic(Exception):
    """The report does not echo the request's nonce and digests."""


class Worker:
    """A started worker process: its phase, report and log paths, and the process."""

    def __init__(self, phase: str, process: subprocess.Popen, report: Path, log: Path) -> None:
        self.phase = phase
        self.process = process
        self.report_path = report
        self.log_path = log

    def cancel(self) -> None:
        """Kill the worker's process group without waiting for a report."""
        _kill_group(self.process)


def start_worker(
    phase: str,
    request: EvaluationRequest,
    request_path: Path,
    extra: tuple[str, ...] = (),
    held: bool = False,
) -> Worker:
    """Start one worker phase in its own process group. A `held` worker loads its modules and
    then waits for `release` before it reads anything the other phase writes."""
    work = Path(request.work_dir)
    report_path = work / f"{phase}-report.json"
    command = [sys.executable, "-m", "gates.evaluator.worker", phase, str(request_path)]
    command += [str(report_path), *extra]
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPOSITORY_ROOT)] + [p for p in [environment.get("PYTHONPATH")] if p]
    )
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    if held:
        environment[HOLD_VARIABLE] = "1"
    if request.device == "cpu":
        environment["TRITON_INTERPRET"] = "1"
    log_path = work / f"{phase}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command,
            cwd=REPOSITORY_ROOT,
            env=environment,
            stdin=subprocess.PIPE if held else subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Worker(phase, process, report_path, log_path)


def finish_worker(
    worker: Worker, request: EvaluationRequest, report_model: type[BaseModel], timeout: float
) -> BaseModel:
    """Release a held worker, wait for it (killing its group on timeout), verify its report."""
    process = worker.process
    if process.stdin is not None:
        try:
            process.stdin.write(b"go\n")
            process.stdin.close()
        except BrokenPipeError:
            pass
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise WorkerTimeout(f"{worker.phase} phase exceeded {timeout:g} s") from None
    _kill_group(process)
    phase, log_path, report_path = worker.phase, worker.log_path, worker.report_path
    if code == EXIT_BAD_INPUT:
        raise GateError(_last_line(log_path) or f"{phase} worker refused its input")
    if code != 0 or not report_path.is_file():
        raise WorkerCrashed(f"{phase} worker exited with code {code}: {_last_line(log_path)}")
    try:
        report = report_model.model_validate_json(report_path.read_text())
    except ValidationError as error:
        raise ReportNotAuthentic(
            f"{phase} report is malformed: {error.errors()[0]['msg']}"
        ) from None
    for field in ("nonce", "task_digest", "solution_digest"):
        if getattr(report, field) != getattr(request, field):
            raise ReportNotAuthentic(f"{phase} report does not echo the request's {field}")
    return report


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the worker's whole process group (it may have left children behind)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + 5
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""
