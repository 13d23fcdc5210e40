"""Tuning gate 2, ruff: changed solution sources pass `ruff check` and `ruff format --check`.

The configuration is the target's (its pyproject.toml at BASE), passed explicitly, because a
solution folder carries none of its own; ruff reads the files and executes nothing.
"""

import subprocess
import sys
import time
from pathlib import Path

from gates.registration.tree_changes import changed_python_files, tree_changes
from gates.verdict import Verdict

GATE = "ruff"
CONCISE = ("--output-format", "concise")


def check(start: Path, candidate: Path, config: Path | None, timeout: float = 120) -> Verdict:
    """Lint and format-check the candidate's added and modified .py files."""
    started = time.monotonic()
    files = changed_python_files(tree_changes(start, candidate))
    if not files:
        return Verdict(gate=GATE, passed=True, summary="no Python files changed")
    settings = ("--config", str(config)) if config is not None and config.is_file() else ()
    ruff = [sys.executable, "-m", "ruff"]
    lint = _run([*ruff, "check", "--no-cache", *settings, *CONCISE, *files], candidate, timeout)
    layout = _run([*ruff, "format", "--check", "--no-cache", *settings, *files], candidate, timeout)
    problems = []
    if lint.returncode != 0:
        problems.append("ruff check: " + _first_line(lint.stdout + lint.stderr))
    if layout.returncode != 0:
        problems.append("ruff format --check: " + _first_line(layout.stdout + layout.stderr))
    details = {"files": files, "check": lint.stdout[-8000:], "format": layout.stdout[-8000:]}
    seconds = time.monotonic() - started
    if problems:
        summary = "; ".join(problems) + " (run `ruff check --fix` and `ruff format`)"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details, seconds=seconds)
    summary = f"{len(files)} changed source(s) lint- and format-clean"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _first_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[0] if lines else "failed"
