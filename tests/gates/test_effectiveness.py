"""Gate 5, test effectiveness: new tests must catch a perturbed reference and pass otherwise."""

import shutil

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


PAIR_REFERENCE = """\
import torch


def pair_reference(x):
    doubled = x * 2
    return doubled, torch.tanh(x)
"""

PAIR_TESTS = """\
import torch

from operators.pair import pair_reference


def test_pair():
    x = torch.linspace(-2, 2, 9, dtype=torch.float64)
    doubled, squashed = pair_reference(x)
    torch.testing.assert_close(doubled, 2 * x, rtol=1e-12, atol=0)
"""


def test_a_two_output_reference_needs_tests_that_check_each_output(
    base_tree, make_candidate, runner, tmp_path
):
    """Tests that check only the first of two outputs are refused: each output is perturbed
    alone, and the second's mutants pass them."""
    reference = ("operators/pair.py", "pair_reference")
    files = {"operators/pair.py": PAIR_REFERENCE, "tests/test_pair.py": PAIR_TESTS}
    candidate = make_candidate(files)
    verdict = effectiveness.check(
        base_tree, candidate, None, runner, tmp_path / "work", reference=reference
    )
    assert not verdict.passed
    assert "scaled by (1 + 1e-3) in its output 1 alone" in verdict.summary
    shutil.rmtree(candidate)
    both = (
        PAIR_TESTS + "    torch.testing.assert_close(squashed, torch.tanh(x), rtol=1e-12, atol=0)\n"
    )
    candidate = make_candidate({**files, "tests/test_pair.py": both})
    verdict = effectiveness.check(
        base_tree, candidate, None, runner, tmp_path / "work2", reference=reference
    )
    assert verdict.passed, verdict.summary
    assert "each of its 2 outputs alone" in verdict.summary
    assert set(verdict.details["returncodes"]) == {
        "candidate", "scaled-0", "scaled-1", "last_operation_dropped-0", "last_operation_dropped-1"
    }  # fmt: skip
