"""Gate 4, tests: BASE's tests still pass (in a session without the new test files), the new
tests pass in their own session, with BASE's pytest configuration, fenced, in time."""

import pytest
from target_fixture import GELU_TEST

from gates.registration import target_tests
from gates.target import load_target_config


@pytest.fixture(scope="module")
def base_record(tmp_path_factory):
    """BASE's outcomes, recorded once for this module as once per run."""
    return tmp_path_factory.mktemp("base-tests")


@pytest.fixture
def judge(base_tree, base_record, runner, tmp_path):
    def check(candidate, timeout=300):
        config = load_target_config(base_tree)
        work = tmp_path / "tests-gate"
        return target_tests.check(base_tree, candidate, config, runner, work, base_record, timeout)

    return check


def test_accepts_passing_tests(judge, make_candidate):
    verdict = judge(make_candidate())
    assert verdict.passed, verdict.summary
    assert verdict.summary == (
        "1 of BASE's 1 tests pass as at BASE; 1 new tests pass in their own session"
    )


def test_rejects_a_failing_test(judge, make_candidate):
    failing = GELU_TEST + "\n\ndef test_wrong():\n    assert 1 + 1 == 3\n"
    verdict = judge(make_candidate({"tests/test_gelu_tanh.py": failing}))
    assert not verdict.passed
    assert (
        verdict.summary == "new test tests/test_gelu_tanh.py::test_wrong failed in its own session"
    )


def test_rejects_a_test_that_hangs(judge, make_candidate):
    hanging = GELU_TEST + "\n\ndef test_sleeps():\n    import time\n\n    time.sleep(60)\n"
    verdict = judge(make_candidate({"tests/test_gelu_tanh.py": hanging}), timeout=8)
    assert not verdict.passed
    assert verdict.summary == "the tests ran past their 8 s timeout"


def test_the_tests_run_fenced(base_tree, judge, make_candidate, runner):
    if runner.description == "unfenced":
        pytest.skip("no Landlock here")
    escape = GELU_TEST + (
        f"\n\ndef test_escape():\n    open({str(base_tree / 'escaped')!r}, 'w').write('x')\n"
    )
    verdict = judge(make_candidate({"tests/test_gelu_tanh.py": escape}))
    assert not verdict.passed
    assert "test_escape failed" in verdict.summary
    assert not (base_tree / "escaped").exists()


def test_a_pytest_ini_added_by_the_candidate_does_not_choose_the_tests(
    judge, make_candidate, commit_of, base_tree
):
    """Class 3: a new pytest.ini that narrows collection changes nothing (BASE's config rules),
    and scope names it."""
    from gates.registration import scope

    broken = "def test_outputs_are_finite():\n    assert False\n"
    ini = "[pytest]\naddopts = --ignore=tests/test_model.py\n"
    candidate = make_candidate({"tests/pytest.ini": ini, "tests/test_model_more.py": broken})
    verdict = judge(candidate)
    assert not verdict.passed
    assert verdict.summary.startswith("new test tests/test_model_more.py::test_outputs_are_finite")
    config = load_target_config(base_tree)
    scoped = scope.check(base_tree, commit_of(candidate), config, "gelu_tanh")
    assert "tests/pytest.ini: tool configuration files may not be added" in scoped.summary
