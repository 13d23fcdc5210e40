"""One capture of the tiny example model (one driver step), shared by the capture tests."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_capture(tmp_path_factory) -> Path:
    """The tiny example at batch 1 captured over two driver steps."""
    from controller.cli import main

    folder = tmp_path_factory.mktemp("capture") / "tiny"
    assert (
        main(
            [
                "capture-ops",
                "--output",
                str(folder),
                "--steps",
                "2",
                "--",
                "examples.parity:tiny",
                "1",
                "0",
            ]
        )
        == 0
    )
    return folder
