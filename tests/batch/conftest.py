"""Shared fixtures for the batch tests."""

from pathlib import Path

import pytest
from batch_fixtures import make_target


@pytest.fixture(scope="module")
def batch_target(tmp_path_factory) -> Path:
    """One tiny target repository per test module (it is only read)."""
    return make_target(tmp_path_factory.mktemp("batch") / "target")


@pytest.fixture
def device_locks(tmp_path, monkeypatch) -> Path:
    """A private device-lock folder, for this process and the batches it starts."""
    folder = tmp_path / "locks"
    monkeypatch.setenv("CONTROLLER_DEVICE_LOCKS", str(folder))
    return folder
