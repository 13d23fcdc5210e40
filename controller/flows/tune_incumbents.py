"""The incumbents of a tune run: `incumbents/NNNN/` snapshots, 0000 the production kernel and
NNNN the attempt that promoted each later one, plus the attempt-by-attempt record they imply.

Every snapshot is staged then renamed, so one that exists is complete; taking it again is a
no-op, which keeps promotion idempotent across a crash.
"""

import json
import os
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from controller.runs.records import load_verdicts, read_json
from controller.runs.store import RunStore, write_json_atomic
from gates.tasks.solution import SOLUTION_FILE
from gates.tuning.launch_settings import declared_settings
from gates.tuning.reading import EvaluationReading, read_evaluation

INCUMBENTS = "incumbents"
RECORD = "incumbent.json"
EVALUATION = "evaluation.json"


class Incumbent(BaseModel):
    """One incumbent: the attempt that promoted it (0: production) and its evaluation."""

    model_config = ConfigDict(frozen=True)

    attempt: int
    folder: Path
    evaluation: dict[str, Any] | None = None

    @property
    def solution(self) -> Path:
        return self.folder / "solution"

    @property
    def reading(self) -> EvaluationReading | None:
        return read_evaluation(self.evaluation) if self.evaluation else None


class AttemptSummary(BaseModel):
    """One attempt as the agent and the report see it: outcome, failing gate, settings tried."""

    model_config = ConfigDict(frozen=True)

    attempt: int
    outcome: str  # promoted | rejected | interrupted | running
    gate: str | None = None
    status: str | None = None
    """The evaluator's status, when the attempt was evaluated."""
    summary: str = ""
    tuning: dict[str, Any] | None = None
    weighted_speedup: float | None = None


def snapshot(run_dir: Path, attempt: int, solution: Path, evaluation: dict | None) -> Incumbent:
    """Copy `solution` to incumbents/<attempt>/ (staged, renamed) unless it is already there."""
    folder = run_dir / INCUMBENTS / f"{attempt:04d}"
    if not folder.is_dir():
        staging = folder.with_name(folder.name + ".partial")
        if staging.exists():
            shutil.rmtree(staging)
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(solution, staging / "solution", ignore=ignore)
        write_json_atomic(staging / RECORD, {"attempt": attempt, "evaluation": evaluation})
        os.replace(staging, folder)
    return load(folder)


def load(folder: Path) -> Incumbent:
    record = json.loads((folder / RECORD).read_text())
    return Incumbent(attempt=record["attempt"], folder=folder, evaluation=record["evaluation"])


def all_incumbents(run_dir: Path) -> list[Incumbent]:
    """Every complete snapshot, oldest first."""
    root = run_dir / INCUMBENTS
    if not root.is_dir():
        return []
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name.isdigit())
    return [load(folder) for folder in folders]


def current(run_dir: Path) -> Incumbent:
    """The latest incumbent (the production kernel until something is promoted)."""
    incumbents = all_incumbents(run_dir)
    if not incumbents:
        raise FileNotFoundError(f"{run_dir / INCUMBENTS} holds no incumbent yet")
    return incumbents[-1]


def attempt_summaries(store: RunStore) -> list[AttemptSummary]:
    """Each attempt's outcome from the journal and its records, in order."""
    promoted = {
        event.get("attempt")
        for event in store.events()
        if event.get("kind") == "transition" and event.get("to") == "promoted"
    }
    summaries = []
    for record in store.history().attempts:
        directory = store.attempt_dir(record.number)
        verdicts = load_verdicts(directory)
        failed = next((verdict for verdict in verdicts if not verdict.passed), None)
        evaluation = read_json(directory / EVALUATION)
        reading = read_evaluation(evaluation) if evaluation else None
        if record.number in promoted:
            outcome = "promoted"
        elif record.status in ("rejected", "interrupted"):
            outcome = record.status
        else:
            outcome = "running"
        summaries.append(
            AttemptSummary(
                attempt=record.number,
                outcome=outcome,
                gate=failed.gate if failed else None,
                status=reading.status if reading else None,
                summary=failed.summary if failed else (verdicts[-1].summary if verdicts else ""),
                tuning=candidate_tuning(directory),
                weighted_speedup=reading.weighted_speedup() if reading else None,
            )
        )
    return summaries


def latest_timed(store: RunStore) -> EvaluationReading | None:
    """The newest evaluation of the run that timed anything (it carries the baseline's times)."""
    for record in reversed(store.history().attempts):
        evaluation = read_json(store.attempt_dir(record.number) / EVALUATION)
        reading = read_evaluation(evaluation) if evaluation else None
        if reading is not None and reading.timed:
            return reading
    return None


def candidate_tuning(attempt_dir: Path) -> dict[str, Any] | None:
    """The `TUNING` point of the attempt's candidate entry file, when it declares one."""
    solution = attempt_dir / "candidate" / "solution"
    manifest = read_json(solution / SOLUTION_FILE)
    if not manifest:
        return None
    entry = solution / manifest["spec"]["entry_point"].split("::", 1)[0]
    try:
        return declared_settings(entry.read_text()).point
    except (OSError, SyntaxError):
        return None


def tune_status(store: RunStore) -> dict[str, Any]:
    """The incumbent's speedup and what stopped the run, for `controller status`."""
    incumbents = all_incumbents(store.run_dir)
    best = incumbents[-1] if incumbents else None
    reading = best.reading if best else None
    speedup = reading.weighted_speedup() if reading else None
    state = store.state()
    if best is None or best.attempt == 0:
        line = "incumbent: the production kernel (nothing promoted)"
    else:
        shown = f"x{speedup:.3f}" if speedup else "n/a"
        workloads = ", ".join(f"{r.name} x{r.speedup:.3f}" for r in reading.workloads)
        line = f"incumbent: attempt {best.attempt}, {shown} weighted over production ({workloads})"
    if state.terminal:
        line += f"; stopped: {state.reason or state.state}"
    return {
        "incumbent_attempt": best.attempt if best else None,
        "weighted_speedup": speedup,
        "stop_reason": state.reason if state.terminal else None,
        "line": line,
    }
