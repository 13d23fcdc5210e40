"""Gate 3, ruff: changed files must pass the target's own `ruff check` and `ruff format`
(one implementation for every flow, `gates/changes/ruff_rules.py`)."""

from target_fixture import GELU_TANH

from gates.changes.limits import ChangeLimits
from gates.changes.ruff_rules import base_configuration, ruff_verdict


def check(base, candidate):
    return ruff_verdict(base, candidate, base_configuration(base), ChangeLimits())


def test_accepts_clean_files(base_tree, make_candidate):
    verdict = check(base_tree, make_candidate())
    assert verdict.passed, verdict.summary
    assert "model/vision.py" in verdict.details["files"]


def test_rejects_an_unused_import(base_tree, make_candidate):
    dirty = GELU_TANH.replace("import torch\n", "import os\nimport torch\n", 1)
    verdict = check(base_tree, make_candidate({"operators/catalog/gelu_tanh.py": dirty}))
    assert not verdict.passed
    assert verdict.summary.startswith("ruff check: operators/catalog/gelu_tanh.py:")
    assert "F401" in verdict.details["check"]


def test_rejects_unformatted_code(base_tree, make_candidate):
    ugly = GELU_TANH.replace('F.gelu(x, approximate="tanh")', "F.gelu( x, approximate='tanh' )")
    verdict = check(base_tree, make_candidate({"operators/catalog/gelu_tanh.py": ugly}))
    assert not verdict.passed
    assert "ruff format --check: operators/catalog/gelu_tanh.py:" in verdict.summary


def test_uses_the_target_config_not_ours(base_tree, make_candidate):
    # The fixture target selects only E, F, W, I: a rule ours enables (B006) is not applied.
    mutable_default = "\n\ndef helper(values=[]):\n    return values\n"
    edits = {"operators/catalog/gelu_tanh.py": GELU_TANH + mutable_default}
    verdict = check(base_tree, make_candidate(edits))
    assert verdict.passed, verdict.summary
