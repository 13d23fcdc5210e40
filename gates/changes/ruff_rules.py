"""One ruff judgement for every flow: `ruff check` and `ruff format --check` on the changed
Python files under BASE's configuration only, and no new suppression that switches ruff off.

Ruff runs with BASE's configuration file (`--config`), or its defaults (`--isolated`) where BASE
has none, so a configuration file the candidate adds cannot exclude files or drop rules.
Suppressions that switch ruff off for a whole file (`# ruff: noqa`, `# flake8: noqa`) or for
every rule on a line (a bare `# noqa`) are refused where BASE's version of the file lacked
them. Ruff reads the files but executes none of them, so it needs no fence.
"""

import io
import re
import subprocess
import sys
import time
import tokenize
import tomllib
from pathlib import Path

from gates.changes.limits import ChangeLimits
from gates.registration.tree_changes import changed_python_files, tree_changes
from gates.verdict import Verdict

GATE = "ruff"
CONCISE = ("--output-format", "concise")
CONFIG_FILES = (".ruff.toml", "ruff.toml", "pyproject.toml")
FILE_LEVEL = re.compile(r"#\s*(ruff|flake8)\s*:\s*noqa", re.IGNORECASE)
BARE = re.compile(r"#\s*noqa(?!\s*:)", re.IGNORECASE)
_NOTHING_RUN = [subprocess.CompletedProcess([], 0, "", "")] * 2
FIX_HINT = " (fix the findings: `ruff check --fix`, `ruff format`)"


def ruff_verdict(
    before: Path,
    after: Path,
    configuration: Path | None,
    limits: ChangeLimits,
    timeout: float = 120,
) -> Verdict:
    """Lint and format-check the .py files `after` adds or modifies relative to `before`,
    under `configuration` (BASE's), refusing new file-level or bare suppressions; a file over
    the per-file limit is refused unread (scope names it too)."""
    started = time.monotonic()
    changed = changed_python_files(tree_changes(before, after))
    if not changed:
        return Verdict(gate=GATE, passed=True, summary="no Python files changed")
    oversized = [
        f"{path}: not linted, over the per-file limit of {limits.max_file_bytes:,} bytes"
        for path in changed
        if _size(after, path) > limits.max_file_bytes
    ]
    files = [path for path in changed if _size(after, path) <= limits.max_file_bytes]
    options = ["--config", str(configuration)] if configuration else ["--isolated"]
    ruff = [sys.executable, "-m", "ruff"]
    common = ["--no-cache", "--force-exclude", *CONCISE, *options]
    commands = [[*ruff, "check", *common, *files], [*ruff, "format", "--check", *common, *files]]
    lint, layout = _run_together(commands if files else [], after, timeout) or _NOTHING_RUN
    suppressions = [problem for file in files for problem in new_suppressions(before, after, file)]
    details = {
        "files": files,
        "config": configuration.name if configuration else "ruff defaults (BASE has none)",
        "check": lint.stdout[-8000:],
        "format": layout.stdout[-8000:],
        "suppressions": suppressions,
    }
    problems = oversized[:1] + suppressions[:1]
    if lint.returncode != 0:
        problems.append("ruff check: " + _first_line(lint.stdout + lint.stderr))
    if layout.returncode != 0:
        problems.append("ruff format --check: " + _first_line(layout.stdout + layout.stderr))
    seconds = time.monotonic() - started
    if problems:
        summary = "; ".join(problems) + FIX_HINT
        return Verdict(gate=GATE, passed=False, summary=summary, details=details, seconds=seconds)
    summary = f"{len(files)} changed Python files are lint- and format-clean"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def _size(tree: Path, path: str) -> int:
    file = Path(tree) / path
    return 0 if file.is_symlink() else file.stat().st_size


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


def new_suppressions(before: Path, after: Path, path: str) -> list[str]:
    """File-level and bare noqa comments in `path` that its version under `before` lacked."""
    known = {(kind, text) for _, kind, text in _suppressions(Path(before) / path)}
    return [
        f"{path}:{line}: {kind} `{text}` switches ruff off; fix the finding or name "
        "the rule (`# noqa: E501`)"
        for line, kind, text in _suppressions(Path(after) / path)
        if (kind, text) not in known
    ]


def _suppressions(file: Path) -> list[tuple[int, str, str]]:
    """Every suppression comment of a file; one that does not tokenize is read line by line,
    so a syntax error cannot hide a comment (ruff reports the error itself)."""
    if not file.is_file():
        return []
    try:
        text = file.read_text()
    except (OSError, UnicodeDecodeError):
        return []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        comments = [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        comments = [(n, line) for n, line in enumerate(text.splitlines(), 1) if "#" in line]
    found = []
    for line, comment in comments:
        if FILE_LEVEL.search(comment):
            found.append((line, "file-level suppression", comment.strip()))
        elif BARE.search(comment):
            found.append((line, "bare suppression", comment.strip()))
    return found


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
