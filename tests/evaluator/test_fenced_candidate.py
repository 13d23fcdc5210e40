"""The candidate worker inside the Landlock fence: an honest solution still passes, and a
write outside the evaluation's folders, which the in-process hooks allow, is refused by the
fence (the run still makes it; the `open` its source spells is refused after the verdict)."""

import os

import pytest
from cheat_packing import cheat_solution

from sandbox.landlock import LandlockFence

MARKER = "/tmp/kc-evaluator-outside-write"


@pytest.mark.slow
def test_the_fence_refuses_a_write_the_hooks_allow(task_root, tmp_path):
    if not LandlockFence().probe().available:
        pytest.skip("Landlock cannot be enforced here")
    from gates.evaluator.evaluation import evaluate

    with open(MARKER, "w"):  # the premise: outside any fence this path is writable
        pass
    os.remove(MARKER)
    solution = cheat_solution("outside_write", tmp_path)
    result = evaluate(task_root / "rms_norm", solution, timeout=240, fence="landlock")
    # The solution ran and attempted the write; its spelled `open` is refused after the verdict.
    assert result.status == "REJECTED", result.reason
    assert result.findings[0].cheat == "EnvironmentInspection", result.reason
    assert "uses the builtin open" in result.reason
    assert not os.path.exists(MARKER), "the fenced candidate wrote outside its folders"
