"""Tuning gate 1, scope: a candidate may change only the .py sources of its solution.

The task package, `solution.json` (name, entry point, definition) and the history the
controller wrote are the controller's; any change to them, a deleted source, a symlink, or a
task package whose identity digest moved rejects the attempt before anything is evaluated.
The changed sources are held to the same size, count and text limits as a registration's
(`gates/changes/limits.py`), so a 43 MB source never reaches the evaluator, and to the same
static rule on asking where the code runs (loaded modules, hooks, environment, frames) that the
evaluator, the registration scope gate and `install` apply: a read the task's baseline source
at the same path does not make is refused here, before anything runs.
"""

import functools
import time
from pathlib import Path

from gates.changes.limits import ChangedFile, ChangeLimits, file_violation, limit_violations
from gates.errors import GateError
from gates.evaluator.detectors.environment_probes import source_probes
from gates.registration.tree_changes import TreeChange, tree_changes
from gates.tasks.package import digest_files, read_package_files
from gates.verdict import Verdict, first_of

GATE = "scope"
SOLUTION_FOLDER = "solution"
TASK_FOLDER = "task"
SOLUTION_MANIFEST = "solution/solution.json"
ALLOWED = (
    "change only the .py files under solution/ (the task package, solution.json and "
    "history/ are the controller's)"
)


def check(
    start: Path, candidate: Path, task_digest: str, limits: ChangeLimits | None = None
) -> Verdict:
    """Compare the candidate tree with the tree its attempt started from."""
    started = time.monotonic()
    limits = limits or ChangeLimits()
    changes = tree_changes(start, candidate)
    sized = [_sized(candidate, change) for change in changes]
    problems = limit_violations(sized, limits)
    for change, file in zip(changes, sized, strict=True):
        problem = _problem(candidate, change, file, limits)
        if problem:
            problems.append(problem)
    digest = _task_digest(candidate / TASK_FOLDER)
    if digest != task_digest:
        problems.append(f"the task package's identity digest changed ({digest[:16]})")
    details = {"changes": [c.model_dump() for c in changes[:500]], "problems": problems[:200]}
    seconds = time.monotonic() - started
    if problems:
        summary = f"{first_of(problems)}: {ALLOWED}"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details, seconds=seconds)
    if not changes:
        summary = "no solution source changed; edit the kernel under solution/"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details, seconds=seconds)
    summary = f"{len(changes)} solution source(s) changed, task package intact"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def _sized(candidate: Path, change: TreeChange) -> ChangedFile:
    path = candidate / change.path
    regular = change.kind != "deleted" and path.is_file() and not path.is_symlink()
    return ChangedFile(path=change.path, size=path.stat().st_size if regular else 0)


def _problem(
    candidate: Path, change: TreeChange, file: ChangedFile, limits: ChangeLimits
) -> str | None:
    path = candidate / change.path
    if change.kind == "deleted":
        return f"{change.path} was deleted"
    if path.is_symlink():
        return f"{change.path} is a symlink"
    if change.path == SOLUTION_MANIFEST:
        return f"{change.path} was changed"
    if not (change.path.startswith(f"{SOLUTION_FOLDER}/") and change.path.endswith(".py")):
        return f"{change.path} was {change.kind}"
    violation = file_violation(file, functools.partial(path.read_bytes), limits)
    return violation or _environment_read(candidate, change.path, path.read_text())


def _environment_read(candidate: Path, path: str, text: str) -> str | None:
    """The first read of where the code runs that the task's baseline source does not make."""
    relative = path.removeprefix(f"{SOLUTION_FOLDER}/")
    baseline = candidate / TASK_FOLDER / SOLUTION_FOLDER / relative
    known = {relative: baseline.read_text()} if baseline.is_file() else {}
    found = source_probes({relative: text}, known)
    if not found:
        return None
    return f"{SOLUTION_FOLDER}/{found[0]}: solution code may not ask where or when it runs"


def _task_digest(folder: Path) -> str:
    if not folder.is_dir():
        return "missing"
    try:
        return digest_files(read_package_files(folder))
    except GateError:
        return "unreadable"
