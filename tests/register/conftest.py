"""Fixtures for register-flow tests: a git fixture target and scripted sessions for it."""

import json
from pathlib import Path

import pytest
from register_session import write_target


@pytest.fixture
def target(tmp_path) -> Path:
    return write_target(tmp_path / "target")


@pytest.fixture
def write_session(tmp_path):
    """Write a scripted session file from lists of actions, one list per attempt."""

    def write(*attempts: list[dict]) -> Path:
        path = tmp_path / "session.json"
        path.write_text(json.dumps({"attempts": list(attempts)}))
        return path

    return write


@pytest.fixture(scope="session")
def fence_arguments() -> list[str]:
    from sandbox.errors import FenceError
    from sandbox.fence import get_fence

    try:
        get_fence("landlock")
    except FenceError:
        return ["--unfenced"]
    return ["--fence", "landlock"]
