"""The `[tool.controller]` table: read from this repository, refused when missing or malformed."""

from pathlib import Path

import pytest

from gates.errors import GateError
from gates.target import load_target_config

REPO = Path(__file__).resolve().parents[2]


def test_this_repository_is_a_target():
    config = load_target_config(REPO)
    assert config.registry_module == "operators.catalog"
    assert config.runtime_package == "operators"
    assert config.is_allowed("operators/catalog/gelu_tanh.py")
    assert not config.is_allowed("controller/cli/__init__.py")


def test_missing_table_is_one_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(GateError, match=r"no \[tool.controller\] table") as caught:
        load_target_config(tmp_path)
    assert "\n" not in str(caught.value)


def test_missing_pyproject(tmp_path):
    with pytest.raises(GateError, match="no pyproject.toml"):
        load_target_config(tmp_path)


def test_malformed_table_names_the_field(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.controller]\nregistry_module = "ops"\ntest_command = ["pytest"]\n'
        'parity_configurations = ["no_colon"]\nallowed_paths = ["src/"]\n'
    )
    with pytest.raises(GateError, match="parity_configurations") as caught:
        load_target_config(tmp_path)
    assert "\n" not in str(caught.value)


def test_unknown_key_is_refused(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.controller]\nregistry_module = "ops"\ntest_command = ["pytest"]\n'
        'parity_configurations = ["m:f"]\nallowed_paths = ["src/"]\nallowed_path = 1\n'
    )
    with pytest.raises(GateError, match="allowed_path"):
        load_target_config(tmp_path)
