"""Gate 3, ruff: changed Python files pass `ruff check` and `ruff format --check` as BASE
configures them.

Ruff runs with BASE's configuration file only (`--config`), so a `ruff.toml` or `pyproject.toml`
the candidate adds or changes cannot exclude files or drop rules; suppressions that switch ruff
off for a whole file (`# ruff: noqa`) or for every rule on a line (a bare `# noqa`) are
rejected. Ruff reads the files but executes none of them, so it needs no fence.
"""

import io
import re
import subprocess
import sys
import time
import tokenize
import tomllib
from pathlib import Path

from gates.registration.tree_changes import changed_python_files, tree_changes
from gates.verdict import Verdict

GATE = "ruff"
CONCISE = ("--output-format", "concise")
CONFIG_FILES = (".ruff.toml", "ruff.toml", "pyproject.toml")
FILE_LEVEL = re.compile(r"#\s*(ruff|flake8)\s*:\s*noqa", re.IGNORECASE)
BARE = re.compile(r"#\s*noqa(?!\s*:)", re.IGNORECASE)


def check(base: Path, candidate: Path, timeout: float = 120) -> Verdict:
    """Lint and format-check the candidate's added and modified .py files under BASE's config."""
    started = time.monotonic()
    files = changed_python_files(tree_changes(base, candidate))
    if not files:
        return Verdict(gate=GATE, passed=True, summary="no Python files changed")
    configuration = base_configuration(base)
    options = ["--config", str(configuration)] if configuration else ["--isolated"]
    ruff = [sys.executable, "-m", "ruff"]
    common = ["--no-cache", "--force-exclude", *CONCISE, *options]
    lint = _run([*ruff, "check", *common, *files], candidate, timeout)
    layout = _run([*ruff, "format", "--check", *common, *files], candidate, timeout)
    suppressions = [
        problem for file in files for problem in new_suppressions(base, candidate, file)
    ]
    details = {
        "files": files,
        "config": str(configuration.name) if configuration else "ruff defaults (BASE has none)",
        "check": lint.stdout[-8000:],
        "format": layout.stdout[-8000:],
        "suppressions": suppressions,
    }
    problems = suppressions[:1]
    if lint.returncode != 0:
        problems.append("ruff check: " + _first_finding(lint.stdout + lint.stderr))
    if layout.returncode != 0:
        problems.append("ruff format --check: " + _first_finding(layout.stdout + layout.stderr))
    seconds = time.monotonic() - started
    if problems:
        return Verdict(
            gate=GATE, passed=False, summary="; ".join(problems), details=details, seconds=seconds
        )
    summary = f"{len(files)} changed Python files are lint- and format-clean"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def base_configuration(base: Path) -> Path | None:
    """BASE's top-level ruff configuration file, in ruff's own order of preference."""
    for name in CONFIG_FILES:
        file = Path(base) / name
        if not file.is_file():
            continue
        if name != "pyproject.toml":
            return file
        try:
            if "ruff" in tomllib.loads(file.read_text()).get("tool", {}):
                return file
        except tomllib.TOMLDecodeError:
            return None
    return None


def new_suppressions(base: Path, candidate: Path, path: str) -> list[str]:
    """File-level and bare noqa comments in `path` that BASE's version of it did not have."""
    before = _suppressions(Path(base) / path)
    found = []
    for line, kind, text in _suppressions(Path(candidate) / path):
        if (kind, text) not in {(k, t) for _, k, t in before}:
            found.append(
                f"{path}:{line}: {kind} `{text}` switches ruff off; fix the finding or name "
                "the rule (`# noqa: E501`)"
            )
    return found


def _suppressions(file: Path) -> list[tuple[int, str, str]]:
    if not file.is_file():
        return []
    found = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(file.read_text()).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return []
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        if FILE_LEVEL.search(token.string):
            found.append((token.start[0], "file-level suppression", token.string.strip()))
        elif BARE.search(token.string):
            found.append((token.start[0], "bare suppression", token.string.strip()))
    return found


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _first_finding(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[0] if lines else "failed"
