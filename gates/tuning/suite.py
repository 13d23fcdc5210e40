"""Run the tuning gates on one candidate, cheap ones first, from one table.

Scope and ruff judge the candidate tree against the tree its attempt started from; a failure
there skips the evaluation. Correctness and latency come from one evaluation of a fresh copy of
the candidate's solution on the controller's own copy of the task package, through an
injectable evaluator (the real one is `gates.evaluator.evaluation.evaluate`).
"""

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gates.changes.limits import ChangeLimits
from gates.changes.ruff_rules import base_configuration, ruff_verdict
from gates.errors import GateError
from gates.tuning import scope
from gates.tuning.reading import read_evaluation
from gates.tuning.verdicts import correctness_verdict, latency_verdict
from gates.verdict import Verdict

Evaluator = Callable[..., Any]
"""`evaluate(task, solution, device=, timeout=, incumbent=)` returning an EvaluationResult."""


class TuningCheck(BaseModel):
    """One candidate to judge and everything the gates need, all paths outside the fence."""

    model_config = ConfigDict(frozen=True)

    start: Path = Field(description="the tree the attempt started from (incumbent + task)")
    candidate: Path = Field(description="the snapshot of the agent's workspace")
    task: Path = Field(description="the controller's own copy of the task package")
    task_digest: str
    base: Path | None = Field(None, description="BASE's tree, whose ruff configuration applies")
    limits: ChangeLimits = Field(default_factory=ChangeLimits, description="size and count")
    device: str = "cpu"
    incumbent: Path | None = Field(None, description="the incumbent solution; None: baseline")
    timeout_s: float = 600.0
    work: Path = Field(description="a fresh folder for this check's copies")


class TuningOutcome(BaseModel):
    """The verdicts in gate order, and the evaluation they came from (JSON), if one ran."""

    model_config = ConfigDict(frozen=True)

    verdicts: list[Verdict]
    evaluation: dict[str, Any] | None = None


CHEAP_GATES: tuple[tuple[str, Callable[[TuningCheck], Verdict]], ...] = (
    # Rationale: only the solution's sources are the agent's to change.
    (
        "scope",
        lambda check: scope.check(check.start, check.candidate, check.task_digest, check.limits),
    ),
    # Rationale: shipped sources read like the rest of the target, by registration's rules.
    ("ruff", lambda check: _ruff(check)),
)


def _ruff(check: TuningCheck) -> Verdict:
    configuration = base_configuration(check.base) if check.base is not None else None
    return ruff_verdict(check.start, check.candidate, configuration, check.limits)


def check_tuning_attempt(check: TuningCheck, evaluator: Evaluator) -> TuningOutcome:
    """Every tuning gate that applies, in order; the evaluation runs only past the cheap ones."""
    verdicts = [gate(check) for _, gate in CHEAP_GATES]
    if not all(verdict.passed for verdict in verdicts):
        return TuningOutcome(verdicts=verdicts)
    solution = check.work / "solution"
    if solution.exists():
        shutil.rmtree(solution)
    shutil.copytree(
        check.candidate / scope.SOLUTION_FOLDER,
        solution,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    started = time.monotonic()
    try:
        result = evaluator(
            check.task,
            solution,
            device=check.device,
            timeout=check.timeout_s,
            incumbent=check.incumbent,
        )
    except GateError as error:
        summary = f"the evaluator refused the solution: {str(error).splitlines()[0]}"
        verdicts.append(Verdict(gate="correctness", passed=False, summary=summary))
        return TuningOutcome(verdicts=verdicts)
    evaluation = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
    reading = read_evaluation(evaluation)
    verdicts.append(correctness_verdict(reading, seconds=time.monotonic() - started))
    if reading.passed:
        verdicts.append(latency_verdict(reading))
    return TuningOutcome(verdicts=verdicts, evaluation=evaluation)
