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


def test_a_hidden_parity_range_that_is_not_ordered_is_refused(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.controller]\nregistry_module = "ops"\ntest_command = ["pytest"]\n'
        'parity_configurations = ["m:f"]\nallowed_paths = ["src/"]\n'
        '[tool.controller.hidden_parity]\ndriver = "m:g"\nbatch_sizes = [8, 2]\n'
    )
    with pytest.raises(GateError, match=r"hidden_parity.batch_sizes") as caught:
        load_target_config(tmp_path)
    assert "\n" not in str(caught.value)


def test_drivers_expectations_and_the_table_are_protected_implicitly():
    config = load_target_config(REPO)
    for path in ("examples/parity.py", "examples/expectation.py", "pyproject.toml"):
        assert config.is_protected(path), path
    assert not config.is_protected("examples/vision.py")


def test_the_hidden_draw_depends_only_on_the_nonce():
    from gates.registration.hidden import configuration_names, draw_hidden

    config = load_target_config(REPO)
    first, again, other = (draw_hidden(config, nonce) for nonce in ("a", "a", "b"))
    assert first == again and first != other
    smallest, largest = config.hidden_parity.batch_sizes
    assert all(smallest <= c.batch <= largest for c in first.configurations)
    assert first.call_sizes[0] % 2 == 1
    # two drawn configurations, then the model at each direct call's size, within its range
    assert configuration_names(config, first)[-1] == "hidden configuration 4"
    at_call_sizes = [c.batch for c in first.configurations[2:]]
    assert at_call_sizes == [min(max(size, smallest), largest) for size in first.call_sizes]


def test_the_gate_table_runs_every_named_gate_static_ones_first():
    from gates.registration import GATE_NAMES
    from gates.registration.suite import GATES

    assert sorted(gate.name for gate in GATES) == sorted(GATE_NAMES)
    static = [gate.runs_code for gate in GATES]
    assert static == sorted(static)
