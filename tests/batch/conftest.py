"""Shared fixtures for the batch tests: a tiny target repository and scripted sessions."""

import json
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def batch_target(tmp_path_factory) -> Path:
    """A real one-commit git repository whose pyproject.toml carries the ruff settings."""
    path = tmp_path_factory.mktemp("batch") / "target"
    path.mkdir()
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


@pytest.fixture
def device_locks(tmp_path, monkeypatch) -> Path:
    """A private device-lock folder, for this process and the batches it starts."""
    folder = tmp_path / "locks"
    monkeypatch.setenv("CONTROLLER_DEVICE_LOCKS", str(folder))
    return folder
