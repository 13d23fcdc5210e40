"""One operator's `tune run` as a child process: its command line and how it ended.

Each operator's runs live in `runs/<op>/` of the batch folder, so the batch finds its run
without parsing output, and `--resume` continues exactly that run.
"""

import json
import sys
from pathlib import Path

from controller.batch.record import BATCH_FILE, OperatorStatus, RunOptions, load

RUNS = "runs"
LOGS = "logs"
EXIT_STATUS: dict[int, OperatorStatus] = {0: "done", 1: "rejected", 130: "interrupted"}
TERMINAL_RUN_STATES = {"done", "rejected", "failed"}
MIN_RUN_MINUTES = 0.01
"""A run's minutes where its preflight took them all: it starts, and stops before an attempt."""


def runs_folder(batch: Path, operator: str) -> Path:
    return batch / RUNS / operator


def run_folder(batch: Path, operator: str) -> Path | None:
    """The operator's tune run folder, if its run was created."""
    folder = runs_folder(batch, operator)
    found = sorted(folder.glob("tune-*")) if folder.is_dir() else []
    return found[-1] if found else None


def run_state(run_dir: Path | None) -> dict:
    """The run's `state.json`, or {} when it has none yet."""
    if run_dir is None or not (run_dir / "state.json").is_file():
        return {}
    try:
        return json.loads((run_dir / "state.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def refusal(log: Path) -> str:
    """The last `controller: error:` line of a run's log."""
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    errors = [line for line in lines if line.startswith("controller: error:")]
    return errors[-1].removeprefix("controller: error: ") if errors else "tune run refused"


def tune_command(batch: Path, operator: str, options: RunOptions) -> list[str]:
    """`python -m controller tune run ...` that starts the operator's run, or resumes it.

    Where the operator's baseline was evaluated at preflight, its minutes are what is left of
    `max_minutes` after that evaluation, and its first attempt is expected to take as long:
    the operator's tuning, preflight included, ends within 10% of the minutes it was given."""
    base = [sys.executable, "-m", "controller.batch.child", "tune", "run"]
    base += ["--runs-dir", str(runs_folder(batch, operator))]
    existing = run_folder(batch, operator)
    if existing is not None:
        return [*base, "--resume", str(existing)]
    command = [*base, "--operator", operator, "--task", str(batch / "tasks" / operator)]
    command += ["--target", options.target, "--device", options.device]
    command += ["--agent", options.agent, "--fence", options.fence]
    if options.unfenced:
        command.append("--unfenced")
    preflight_s = _preflight_seconds(batch, operator)
    if preflight_s is not None:
        command += ["--expected-attempt-seconds", str(max(0.01, round(preflight_s, 2)))]
        if options.max_minutes is not None:
            left = max(MIN_RUN_MINUTES, options.max_minutes - preflight_s / 60)
            options = options.model_copy(update={"max_minutes": round(left, 3)})
    for field in (
        "base_url",
        "max_attempts",
        "max_minutes",
        "max_tokens",
        "max_dollars",
        "patience",
        "target_speedup",
    ):
        value = getattr(options, field)
        if value is not None:
            command += ["--" + field.replace("_", "-"), str(value)]
    return command


def _preflight_seconds(batch: Path, operator: str) -> float | None:
    """The wall time of the operator's preflight, where the batch ran one and kept it."""
    if not (batch / BATCH_FILE).is_file():
        return None
    entry = load(batch).entries.get(operator)
    preflight = entry.preflight if entry is not None else None
    return preflight.seconds if preflight is not None and preflight.seconds else None


def outcome(batch: Path, operator: str, exit_code: int) -> tuple[OperatorStatus, str]:
    """The operator's status from the run's own state (else its exit code), and why."""
    state = run_state(run_folder(batch, operator))
    if exit_code == 2:  # the run refused to start or resume; its log says why
        return "failed", refusal(batch / LOGS / f"{operator}.log")
    if state.get("state") in TERMINAL_RUN_STATES:
        return state["state"], state.get("reason") or ""
    if exit_code in EXIT_STATUS and EXIT_STATUS[exit_code] != "done":
        return EXIT_STATUS[exit_code], state.get("reason") or ""
    if exit_code == 75 or state.get("state") == "interrupted":
        return "interrupted", state.get("reason") or "the machine failed; resume the batch"
    return "failed", f"tune run exited {exit_code}; its output is in {LOGS}/{operator}.log"
