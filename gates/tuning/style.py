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
    lint, layout = _run_together(
        [
            [*ruff, "check", "--no-cache", *settings, *CONCISE, *files],
            [*ruff, "format", "--check", "--no-cache", *settings, *files],
        ],
        candidate,
        timeout,
    )
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


def _run_together(
    commands: list[list[str]], cwd: Path, timeout: float
) -> list[subprocess.CompletedProcess]:
    """Start every command, then wait for each: the lint and format checks overlap."""
    processes = [
        subprocess.Popen(
            argv,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for argv in commands
    ]
    finished = []
    for argv, process in zip(commands, processes, strict=True):
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        finished.append(subprocess.CompletedProcess(argv, process.returncode, stdout, stderr))
    return finished


def _first_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[0] if lines else "failed"
