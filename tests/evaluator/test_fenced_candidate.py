"""The candidate worker inside the Landlock fence: an honest solution still passes, and a
write outside the evaluation's folders, which the in-process hooks allow, is refused."""

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
    assert result.status == "PASSED", result.reason  # the write was attempted, then refused
    assert not os.path.exists(MARKER), "the fenced candidate wrote outside its folders"
