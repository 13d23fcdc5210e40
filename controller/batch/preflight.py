"""Before tuning: each operator's task package, and its baseline judged by the evaluator.

A baseline that does not pass marks only its own operator (`preflight_failed`); the batch goes
on with the others. On CUDA the evaluation also times the baseline, printed before tuning.
"""

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from controller.batch.record import Preflight

NO_PREFLIGHT_HINT = (
    "(the production kernel fails its own task; --no-preflight tunes it anyway, every "
    "candidate still held to the contract)"
)
"""What a preflight the baseline's own numbers failed adds, so a user whose baseline misses a
hidden draw can go on (an evaluator that crashed gets no such advice)."""


def preflight_hint(status: str) -> str:
    """NO_PREFLIGHT_HINT, after a space, where the baseline's outputs failed; else nothing."""
    return f" {NO_PREFLIGHT_HINT}" if status.startswith("INCORRECT") else ""


Evaluator = Callable[..., object]
TASKS = "tasks"


def write_tasks(batch: Path, operators: list[str], capture: str | None = None) -> dict[str, Path]:
    """`tasks/<op>/` for each operator (kept if present), as `controller generate` writes them:
    from the catalog, or with `capture` as `controller generate --captured` does."""
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    folders = {}
    for name in operators:
        folder = batch / TASKS / name
        if not folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            declaration = REGISTRY.declaration(name)
            files = render_task(name, capture)
            folder, _ = write_package(declaration, batch / TASKS, files=files)
        folders[name] = folder
    return folders


def render_task(operator: str, capture: str | None) -> dict[str, bytes] | None:
    """A captured task's files (workloads weighted by call count), or None for the catalog's."""
    if capture is None:
        return None
    from gates.tasks.captured import render_captured_package
    from operators import REGISTRY

    return render_captured_package(REGISTRY.declaration(operator), Path(capture))


def preflight(task: Path, device: str, evaluator: Evaluator | None = None) -> Preflight:
    """Evaluate the task's own baseline solution by the task's numerics and timing (the
    compute rules for candidates do not apply to it); never raises for a failing baseline. Its
    wall time is kept: the operator's run expects its first attempt to take as long."""
    if evaluator is None:
        from gates.evaluator.evaluation import evaluate as evaluator
    started = time.monotonic()
    try:
        result = evaluator(task, task / "solution", device=device, judged_as="baseline")
    except Exception as error:  # an evaluator that cannot run marks this operator only
        text = str(error).strip().splitlines()
        return Preflight(
            passed=False,
            status="EVALUATOR_ERROR",
            reason=f"{type(error).__name__}: {text[0] if text else ''}",
        )
    return _reading(result).model_copy(update={"seconds": time.monotonic() - started})


def _reading(result) -> Preflight:
    from gates.tuning.reading import read_evaluation

    reading = read_evaluation(result)
    workloads = {row.name: row.candidate_us for row in reading.workloads}
    baseline = None
    if reading.workloads:
        total = sum(row.weight for row in reading.workloads) or 1.0
        baseline = sum(row.weight * row.candidate_us for row in reading.workloads) / total
    return Preflight(
        passed=reading.passed,
        status=reading.status,
        reason=reading.reason,
        baseline_us=baseline,
        workloads_us=workloads,
    )
