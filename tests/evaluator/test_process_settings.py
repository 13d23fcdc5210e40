"""The settings the reference roles compile under: a changed environment variable or Triton
knob override is named, and nothing is named while both are as they were."""

import os

import pytest
import triton

from gates.evaluator.detectors.process_settings import ProcessSettings, SettingsChanged


def test_unchanged_settings_pass():
    ProcessSettings().check("after a call")


def test_an_environment_variable_set_is_named(monkeypatch):
    settings = ProcessSettings()
    monkeypatch.setenv("DISABLE_LLVM_OPT", "1")
    with pytest.raises(SettingsChanged, match="DISABLE_LLVM_OPT"):
        settings.check("after a call")


def test_a_knob_override_without_the_environment_is_named():
    """A knob set in its namespace's dict directly, so no environment variable changes."""
    overrides = vars(triton.knobs.compilation)
    before = dict(overrides)
    settings = ProcessSettings()
    overrides["disable_line_info"] = True
    try:
        assert os.environ.get("TRITON_DISABLE_LINE_INFO") is None
        with pytest.raises(SettingsChanged, match="compilation"):
            settings.check("after a call")
    finally:
        overrides.clear()
        overrides.update(before)
