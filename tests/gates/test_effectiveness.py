"""Gate 5, test effectiveness: new tests must catch a perturbed reference and pass otherwise."""

from target_fixture import GELU_TEST

from gates.registration import effectiveness


def judge(base_tree, candidate, probe, runner, tmp_path):
    return effectiveness.check(base_tree, candidate, probe(candidate), runner, tmp_path / "work")


def test_accepts_tests_that_catch_both_mutations(
    base_tree, make_candidate, probe, runner, tmp_path
):
    verdict = judge(base_tree, make_candidate(), probe, runner, tmp_path)
    assert verdict.passed, verdict.summary
    assert verdict.details["returncodes"] == {
        "candidate": 0,
        "scaled": 1,
        "last_operation_dropped": 1,
    }


def test_rejects_a_loose_test(base_tree, make_candidate, probe, runner, tmp_path):
    loose = GELU_TEST.replace("rtol=1e-9, atol=1e-12", "rtol=1e-2, atol=1e-2")
    candidate = make_candidate({"tests/test_gelu_tanh.py": loose})
    verdict = judge(base_tree, candidate, probe, runner, tmp_path)
    assert not verdict.passed
    assert verdict.summary.startswith(
        "the new tests (tests/test_gelu_tanh.py) still pass with the reference "
        "gelu_tanh_reference scaled by (1 + 1e-3)"
    )


def test_rejects_a_test_that_only_checks_shapes(base_tree, make_candidate, probe, runner, tmp_path):
    shallow = (
        "import torch\n\nfrom operators import REGISTRY\n\n\ndef test_shape():\n"
        "    x = torch.ones(3)\n"
        '    assert REGISTRY.declaration("gelu_tanh").reference(x).shape == x.shape\n'
    )
    candidate = make_candidate({"tests/test_gelu_tanh.py": shallow})
    verdict = judge(base_tree, candidate, probe, runner, tmp_path)
    assert not verdict.passed
    assert "still pass with the reference" in verdict.summary


def test_rejects_new_tests_that_fail_on_the_candidate(
    base_tree, make_candidate, probe, runner, tmp_path
):
    wrong = GELU_TEST.replace("0.5 * x *", "0.6 * x *")
    candidate = make_candidate({"tests/test_gelu_tanh.py": wrong})
    verdict = judge(base_tree, candidate, probe, runner, tmp_path)
    assert not verdict.passed
    assert verdict.summary.startswith("the new tests fail on the candidate itself")


def test_rejects_a_candidate_without_new_tests(base_tree, make_candidate, probe, runner, tmp_path):
    candidate = make_candidate({"tests/test_gelu_tanh.py": None})
    verdict = judge(base_tree, candidate, probe, runner, tmp_path)
    assert not verdict.passed
    assert verdict.summary == "the candidate added no new test files"
