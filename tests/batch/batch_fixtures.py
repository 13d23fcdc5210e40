"""Helpers for the batch tests: a tiny target repository and scripted sessions."""

import json
import subprocess
from pathlib import Path


def make_target(path: Path) -> Path:
    """A real one-commit git repository whose pyproject.toml carries the ruff settings."""
    path.mkdir(parents=True)
    (path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    for command in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", "-C", str(path), *command], check=True, capture_output=True)
    return path


def write_script(path: Path, *attempts: list[dict]) -> Path:
    """A `scripted:` agent file: attempt n replays attempts[n - 1]."""
    path.write_text(json.dumps({"attempts": list(attempts)}))
    return path
