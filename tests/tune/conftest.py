"""Shared fixtures for the tune-flow tests."""

import pytest
from tune_fixtures import make_target


@pytest.fixture(scope="module")
def tune_target(tmp_path_factory):
    """One tiny target repository per test module (it is only read)."""
    return make_target(tmp_path_factory.mktemp("tune") / "target")
