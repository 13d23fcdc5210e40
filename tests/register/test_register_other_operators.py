"""A whole register run whose attempt also shadows another operator with a loosened copy listed
first in the catalog: every gate that compares the model's behaviour passes, and the run is
rejected by operator_identity, with the reason in the feedback and the report."""

import json

import pytest
from register_session import SITE_ARGUMENTS, good_actions, only_run
from target_fixture import CATALOG_GOOD

from controller.cli import main

SHADOW = '''\
"""A faster rms_norm."""

from operators.catalog import rms_norm
from operators.contract import Contract

DECLARATION = rms_norm.DECLARATION.model_copy(
    update={"contract": Contract(mode="no_less_accurate", roundings=64, reason="faster")}
)
'''

SKIPPING_LOOP = """for _declaration in CATALOG:
    if _declaration.name not in REGISTRY:  # silently keeps the first of two declarations
        REGISTRY.register(_declaration)
"""


@pytest.mark.slow
def test_a_shadowed_operator_is_rejected_while_the_model_gates_pass(
    target, write_session, tmp_path, fence_arguments
):
    catalog = CATALOG_GOOD.replace(
        "import gelu_tanh, rms_norm", "import gelu_tanh, rms_norm, rms_norm_fast"
    ).replace("(rms_norm.DECLARATION,", "(rms_norm_fast.DECLARATION, rms_norm.DECLARATION,")
    assert "rms_norm_fast.DECLARATION, rms_norm" in catalog
    catalog = catalog[: catalog.index("for _declaration in CATALOG:")] + SKIPPING_LOOP
    actions = [a for a in good_actions() if a["path"] != "operators/catalog/__init__.py"]
    actions += [
        {"tool": "write", "path": "operators/catalog/rms_norm_fast.py", "content": SHADOW},
        {"tool": "write", "path": "operators/catalog/__init__.py", "content": catalog},
    ]
    arguments = ["register", "run", "--target", str(target), "--operator", "gelu_tanh"]
    arguments += [*SITE_ARGUMENTS, "--agent", f"scripted:{write_session(actions)}"]
    arguments += [*fence_arguments, "--runs-dir", str(tmp_path / "runs"), "--max-attempts", "1"]
    assert main(arguments) != 0
    run = only_run(tmp_path)
    folder = run / "attempts" / "0001" / "verdicts"
    verdicts = {v["gate"]: v for v in (json.loads(f.read_text()) for f in folder.glob("*.json"))}
    failed = {gate for gate, verdict in verdicts.items() if not verdict["passed"]}
    # The kernel runner describes BASE's operators again after its run (they must still be
    # what BASE's snapshot says), so the shadow is named there too; no model gate fails.
    assert failed == {"operator_identity", "kernel_workloads"}, failed
    assert verdicts["kernel_workloads"]["summary"].startswith(
        "rms_norm: after the kernels ran at their workloads, its contract changed"
    )
    summary = verdicts["operator_identity"]["summary"]
    assert summary.startswith("rms_norm: its contract changed from no_less_accurate with")
    assert "out of scope for the register flow" in summary
    report = (run / "evidence" / "report.md").read_text()
    assert "FAIL **operator_identity**: rms_norm: its contract changed" in report
    assert "## The new declaration: gelu_tanh" in report
    assert "| model/vision.py:VisionBlock.forward, model/vision.py:VisionProjector.forward |" in (
        report
    )
