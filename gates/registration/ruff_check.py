"""Gate 3, ruff: changed Python files pass `ruff check` and `ruff format --check`.

Ruff runs in the candidate tree so the target's own configuration applies; ruff reads the
files but executes none of them, so it needs no fence.
"""

import subprocess
import sys
import time
from pathlib import Path

from gates.registration.tree_changes import changed_python_files, tree_changes
from gates.verdict import Verdict

GATE = "ruff"
CONCISE = ("--output-format", "concise")


def check(base: Path, candidate: Path, timeout: float = 120) -> Verdict:
    """Lint and format-check the candidate's added and modified .py files."""
    started = time.monotonic()
    files = changed_python_files(tree_changes(base, candidate))
    if not files:
        return Verdict(gate=GATE, passed=True, summary="no Python files changed")
    ruff = [sys.executable, "-m", "ruff"]
    lint = _run(
        [*ruff, "check", "--no-cache", "--force-exclude", *CONCISE, *files], candidate, timeout
    )
    layout = _run(
        [*ruff, "format", "--check", "--no-cache", "--force-exclude", *CONCISE, *files],
        candidate,
        timeout,
    )
    details = {"files": files, "check": lint.stdout[-8000:], "format": layout.stdout[-8000:]}
    problems = []
    if lint.returncode != 0:
        problems.append("ruff check: " + _first_finding(lint.stdout))
    if layout.returncode != 0:
        problems.append("ruff format --check: " + _first_finding(layout.stdout))
    seconds = time.monotonic() - started
    if problems:
        return Verdict(
            gate=GATE, passed=False, summary="; ".join(problems), details=details, seconds=seconds
        )
    summary = f"{len(files)} changed Python files are lint- and format-clean"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _first_finding(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[0] if lines else "failed"
