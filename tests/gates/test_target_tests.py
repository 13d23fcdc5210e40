"""Gate 4, tests: the target's test command must pass on the candidate, fenced, in time."""

import pytest
from target_fixture import GELU_TEST

from gates.registration import target_tests
from gates.target import load_target_config


def test_accepts_passing_tests(base_tree, make_candidate, runner):
    verdict = target_tests.check(make_candidate(), load_target_config(base_tree), runner)
    assert verdict.passed, verdict.summary
    assert "passed" in verdict.summary


def test_rejects_a_failing_test(base_tree, make_candidate, runner):
    failing = GELU_TEST + "\n\ndef test_wrong():\n    assert 1 + 1 == 3\n"
    candidate = make_candidate({"tests/test_gelu_tanh.py": failing})
    verdict = target_tests.check(candidate, load_target_config(base_tree), runner)
    assert not verdict.passed
    assert "the test command failed (exit 1)" in verdict.summary
    assert "FAILED tests/test_gelu_tanh.py::test_wrong" in verdict.summary


def test_rejects_a_test_that_hangs(base_tree, make_candidate, runner):
    hanging = GELU_TEST + "\n\ndef test_sleeps():\n    import time\n\n    time.sleep(60)\n"
    candidate = make_candidate({"tests/test_gelu_tanh.py": hanging})
    verdict = target_tests.check(candidate, load_target_config(base_tree), runner, timeout=8)
    assert not verdict.passed
    assert verdict.summary == "the test command ran past its 8 s timeout"


def test_the_tests_run_fenced(base_tree, make_candidate, runner):
    if runner.description == "unfenced":
        pytest.skip("no Landlock here")
    escape = GELU_TEST + (
        f"\n\ndef test_escape():\n    open({str(base_tree / 'escaped')!r}, 'w').write('x')\n"
    )
    candidate = make_candidate({"tests/test_gelu_tanh.py": escape})
    verdict = target_tests.check(candidate, load_target_config(base_tree), runner)
    assert not verdict.passed
    assert "test_escape" in verdict.summary
    assert not (base_tree / "escaped").exists()
