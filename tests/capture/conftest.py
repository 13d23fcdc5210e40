"""One capture of the tiny example model, shared by the capture tests."""

from pathlib import Path

import pytest

STEPS = 2
DRIVER = ["controller.profiling.example_driver:forward", "tiny", "1"]


@pytest.fixture(scope="session")
def tiny_capture(tmp_path_factory) -> Path:
    """The tiny example at batch 1 captured over STEPS forward passes (built once)."""
    from controller.cli import main

    folder = tmp_path_factory.mktemp("capture") / "tiny"
    argv = ["capture-ops", "--output", str(folder), "--steps", str(STEPS), "--", *DRIVER]
    assert main(argv) == 0
    return folder
