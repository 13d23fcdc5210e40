"""Tuning gate 1, scope: a candidate may change only the .py sources of its solution.

The task package, `solution.json` (name, entry point, definition) and the history the
controller wrote are the controller's; any change to them, a deleted source, a symlink, or a
task package whose identity digest moved rejects the attempt before anything is evaluated.
"""

import time
from pathlib import Path

from gates.errors import GateError
from gates.registration.tree_changes import tree_changes
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


def check(start: Path, candidate: Path, task_digest: str) -> Verdict:
    """Compare the candidate tree with the tree its attempt started from."""
    started = time.monotonic()
    changes = tree_changes(start, candidate)
    problems = []
    for change in changes:
        path = candidate / change.path
        if change.kind == "deleted":
            problems.append(f"{change.path} was deleted")
        elif path.is_symlink():
            problems.append(f"{change.path} is a symlink")
        elif change.path == SOLUTION_MANIFEST:
            problems.append(f"{change.path} was changed")
        elif not (change.path.startswith(f"{SOLUTION_FOLDER}/") and change.path.endswith(".py")):
            problems.append(f"{change.path} was {change.kind}")
    digest = _task_digest(candidate / TASK_FOLDER)
    if digest != task_digest:
        problems.append(f"the task package's identity digest changed ({digest[:16]})")
    details = {"changes": [c.model_dump() for c in changes], "problems": problems}
    seconds = time.monotonic() - started
    if problems:
        summary = f"{first_of(problems)}: {ALLOWED}"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details, seconds=seconds)
    sources = [c.path for c in changes]
    if not sources:
        summary = "no solution source changed; edit the kernel under solution/"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details, seconds=seconds)
    summary = f"{len(sources)} solution source(s) changed, task package intact"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def _task_digest(folder: Path) -> str:
    if not folder.is_dir():
        return "missing"
    try:
        return digest_files(read_package_files(folder))
    except GateError:
        return "unreadable"
