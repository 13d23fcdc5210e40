"""The controller's side of the process boundary: start a worker in its own process group,
kill the group on timeout, and accept only a report that echoes the request.

A worker is forked from the zygote (`zygote.py`, started once per environment) when it can
be, else started as a fresh interpreter; both run the same `worker` code the same way.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from gates.errors import GateError
from gates.evaluator.forked_worker import ZygoteUnavailable, start_method, zygote_for
from gates.evaluator.protocol import EvaluationRequest

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent.parent
EXIT_BAD_INPUT = 3
HOLD_VARIABLE = "CONTROLLER_WORKER_HELD"
# Variables that change while the controller runs and mean nothing to a worker: left out of
# its environment, so they do not multiply zygotes (one per distinct worker environment).
VOLATILE_VARIABLES = frozenset({"PYTEST_CURRENT_TEST", "CONTROLLER_WORKER_START", HOLD_VARIABLE})


class WorkerTimeout(Exception):
    """The worker ran past its time limit and was killed with its process group."""


class WorkerCrashed(Exception):
    """The worker ended without writing a report (crash, os._exit, signal)."""


class ReportNotAuthentic(Exception):
    """The report does not echo the request's nonce and digests."""


class Worker:
    """A started worker process: its phase, report and log paths, and the process (a Popen
    or a `ForkedProcess`, which answers the same calls)."""

    def __init__(self, phase: str, process, report: Path, log: Path) -> None:
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
    arguments = [phase, str(request_path), str(report_path), *extra]
    environment = worker_environment(request.device)
    log_path = work / f"{phase}.log"
    process = None
    if start_method() == "zygote":
        process = _forked(arguments, environment, log_path, held)
    if process is None:
        if held:
            environment[HOLD_VARIABLE] = "1"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "gates.evaluator.worker", *arguments],
                cwd=REPOSITORY_ROOT,
                env=environment,
                stdin=subprocess.PIPE if held else subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    return Worker(phase, process, report_path, log_path)


def worker_environment(device: str) -> dict[str, str]:
    """A worker's environment: the controller's, the repository importable, the Triton
    interpreter on a CPU (the variables in VOLATILE_VARIABLES left out)."""
    environment = {k: v for k, v in os.environ.items() if k not in VOLATILE_VARIABLES}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPOSITORY_ROOT)] + [p for p in [environment.get("PYTHONPATH")] if p]
    )
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    if device == "cpu":
        environment["TRITON_INTERPRET"] = "1"
    return environment


def _forked(arguments: list[str], environment: dict, log_path: Path, held: bool):
    """A worker forked from this environment's zygote, or None when there is none."""
    forked_environment = {**environment, HOLD_VARIABLE: "1"} if held else environment
    try:
        zygote = zygote_for(environment, REPOSITORY_ROOT)
        return zygote.fork(arguments, forked_environment, REPOSITORY_ROOT, log_path, held)
    except ZygoteUnavailable:
        return None


def finish_worker(
    worker: Worker, request: EvaluationRequest, report_model: type[BaseModel], timeout: float
) -> BaseModel:
    """Release a held worker, wait for it (killing its group on timeout), verify its report."""
    process = worker.process
    if process.stdin is not None:
        try:
            process.stdin.write(b"go\n")
            process.stdin.close()
        except OSError:  # the worker already ended; its exit code says how
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
