"""Shared fixtures for the install and verify tests."""

from pathlib import Path

import pytest
from export_fixtures import make_export


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    return make_export(tmp_path_factory.mktemp("export"))
