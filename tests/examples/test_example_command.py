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


def time_arguments(tmp_path, *extra: str) -> list[str]:
    """A cheap timing run: the references only, eager, one timed forward."""
    output = str(tmp_path / "timing.json")
    return ["example", "run", "--time", "--profile", "torch", "--mode", "eager", *extra] + [
        "--iterations",
        "1",
        "--warmup",
        "0",
        "--output",
        output,
    ]


def test_time_prints_each_row_and_writes_json(tmp_path, capsys):
    assert main(time_arguments(tmp_path)) == 0
    printed = capsys.readouterr().out
    assert "torch" in printed and "eager" in printed and "median ms" in printed
    report = json.loads((tmp_path / "timing.json").read_text())
    assert report["environment"]["torch"] == torch.__version__
    (row,) = report["rows"]
    assert row["profile"] == "torch" and row["mode"] == "eager"
    assert row["within_expectation"] and row["samples"] == 1 and row["median_ms"] > 0


def test_time_reports_a_mode_that_fails_and_exits_1(tmp_path, capsys, monkeypatch):
    import examples.timing as timing

    def broken_deploy(model, mode, inputs):
        raise RuntimeError("capture failed\nsecond line")

    monkeypatch.setattr(timing, "deploy", broken_deploy)
    assert main(time_arguments(tmp_path)) == 1
    assert "failed: RuntimeError: capture failed" in capsys.readouterr().out
    (row,) = json.loads((tmp_path / "timing.json").read_text())["rows"]
    assert row["error"] == "RuntimeError: capture failed ... second line"
    assert row["median_ms"] is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_time_refuses_graph_modes_without_cuda(tmp_path, capsys):
    assert main(["example", "run", "--time", "--mode", "graph"]) == 2
    assert "--mode graph needs a CUDA GPU" in capsys.readouterr().err


def test_time_refuses_zero_iterations(tmp_path, capsys):
    assert main(["example", "run", "--time", "--iterations", "0"]) == 2
    assert "--iterations 0" in capsys.readouterr().err
