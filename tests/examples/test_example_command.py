"""`controller example run` prints every output's difference and exits 0 when all are within.

The real `none` run is covered in test_example_expectation.py; here the candidate profile is
the references, so the command's own behaviour is tested without another interpreter run.
"""

import json

import pytest
import torch

from controller.cli import main


@pytest.fixture
def references_as_candidate(monkeypatch):
    """Make `example run` compare torch against torch (all differences 0)."""
    import examples.expectation as expectation

    real = expectation.compare_profiles

    def compare(size, batch, seed, device, candidate="none", reference="torch"):
        return real(size, batch, seed, device, candidate="torch", reference=reference)

    monkeypatch.setattr(expectation, "compare_profiles", compare)


@pytest.fixture
def wrong_actions(monkeypatch):
    """Make `example run` see a candidate whose actions are off by one everywhere."""
    import examples.expectation as expectation

    real = expectation.compare_outputs

    def compare(reference, candidate, calls_per_output):
        moved = dict(candidate, actions=candidate["actions"] + 1.0)
        return real(reference, moved, calls_per_output)

    monkeypatch.setattr(expectation, "compare_outputs", compare)


def test_run_prints_each_difference_and_exits_0(capsys, references_as_candidate):
    assert main(["example", "run"]) == 0
    printed = capsys.readouterr().out
    assert "kernel_profile none vs torch" in printed
    for output in ("actions", "first_velocity", "prefix_keys", "vision_features"):
        assert output in printed
    assert "all outputs within" in printed


def test_run_json_reports_the_comparison(capsys, references_as_candidate):
    assert main(["example", "run", "--json", "--batch", "2", "--seed", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["batch"] == 2 and report["seed"] == 3 and report["within_expectation"]
    assert {row["name"] for row in report["outputs"]} >= {"actions", "vision_features"}


def test_run_exits_1_and_says_so_when_an_output_is_outside(
    capsys, references_as_candidate, wrong_actions
):
    assert main(["example", "run"]) == 1
    printed = capsys.readouterr().out
    assert "NO" in printed and "OUTSIDE" in printed


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_pi05_without_cuda_is_a_one_line_error(capsys):
    assert main(["example", "run", "--size", "pi05"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_a_batch_below_one_is_refused(capsys):
    assert main(["example", "run", "--batch", "0"]) == 2
    assert "--batch" in capsys.readouterr().err
