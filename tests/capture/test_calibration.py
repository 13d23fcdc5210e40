"""`controller calibrate` on the tiny example's capture records the baseline's error against
FP64; on the captured layouts (fixtures and fresh draws) the contract passes the production
kernel and refuses a kernel one BF16 step off on every element and one computing in lower
precision than the baseline; a reference changed since calibration makes generate and tune-all
refuse in one line."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from controller.cli import main
from gates.calibration.contract_file import (
    CALIBRATION_FILE,
    DEFAULT_MARGIN,
    PACKAGE_FILE,
    capture_digest,
    load_calibration,
    reference_digest,
)
from gates.calibration.measure import input_sets
from operators import REGISTRY
from operators.accuracy import AccuracyCheck
from operators.call_capture import load_capture
from operators.declaration import as_outputs

CALIBRATED = ["rms_norm", "ada_rms_norm"]
OTHER_SEEDS = (11, 12)  # not the calibration's own draws


@pytest.fixture(scope="module")
def calibrated(tiny_capture, tmp_path_factory) -> Path:
    """A copy of the tiny capture with rms_norm and ada_rms_norm calibrated on the CPU."""
    folder = tmp_path_factory.mktemp("calibrated") / "tiny"
    shutil.copytree(tiny_capture, folder)
    assert main(["calibrate", str(folder), "--operators", *CALIBRATED, "--device", "cpu"]) == 0
    return folder


def sets_of(folder: Path, name: str) -> list[list[torch.Tensor]]:
    """The operator's fixture and two fresh draws of every captured layout of it."""
    declaration = REGISTRY.declaration(name)
    layouts = [layout for layout in load_capture(folder).layouts if layout.operator == name]
    device = torch.device("cpu")
    return [
        s
        for layout in layouts
        for s in input_sets(declaration, folder, layout, OTHER_SEEDS, device)
    ]


def production(name: str, inputs) -> list[torch.Tensor]:
    declaration = REGISTRY.declaration(name)
    with torch.no_grad():
        return list(as_outputs(declaration.preferred(*inputs, **declaration.params)))


def test_the_calibration_records_its_figures_and_identities(calibrated):
    calibration = load_calibration(calibrated)
    assert sorted(calibration.operators) == sorted(CALIBRATED)
    assert calibration.capture_sha256 == capture_digest(calibrated)
    assert calibration.environment["torch"] == torch.__version__
    for name in CALIBRATED:
        operator = calibration.operators[name]
        assert operator.reference_sha256 == reference_digest(REGISTRY.declaration(name))
        assert operator.measured_on.fixtures and operator.measured_on.seeds
        for output in operator.outputs:
            assert 0 < output.baseline_error < 2.0**-7  # about one BF16 rounding
            assert output.tolerance == pytest.approx((1 + DEFAULT_MARGIN) * output.baseline_error)


def test_the_production_kernel_keeps_the_contract_on_the_captured_layouts(calibrated):
    for name in CALIBRATED:
        declaration = REGISTRY.declaration(name)
        for inputs in sets_of(calibrated, name):
            check = AccuracyCheck.on_inputs(declaration, inputs)
            assert check.violation(production(name, inputs)) is None, name


def test_one_bf16_step_off_on_every_element_is_refused_against_fp64(calibrated):
    for name in CALIBRATED:
        declaration = REGISTRY.declaration(name)
        for inputs in sets_of(calibrated, name):
            stepped = [
                torch.nextafter(y, torch.full_like(y, float("inf")))
                for y in production(name, inputs)
            ]
            violation = AccuracyCheck.on_inputs(declaration, inputs).violation(stepped)
            assert violation is not None and "against FP64" in violation.reason, name


def rms_norm_in_bfloat16_steps(x, weight, eps=1e-6):
    """rms_norm whose normalised row is rounded to BF16 before the scale: two roundings where
    the baseline has one."""
    inverse_rms = torch.rsqrt(x.float().pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x.float() * inverse_rms).to(x.dtype) * weight


def test_a_lower_precision_kernel_is_refused_against_fp64(calibrated):
    declaration = REGISTRY.declaration("rms_norm")
    for inputs in sets_of(calibrated, "rms_norm"):
        got = rms_norm_in_bfloat16_steps(*inputs, **declaration.params)
        violation = AccuracyCheck.on_inputs(declaration, inputs).violation([got])
        assert violation is not None and "exceeds the bound" in violation.reason


def test_generate_carries_the_calibrated_contract_and_says_so(calibrated, tmp_path, capsys):
    output = tmp_path / "tasks"
    argv = ["generate", "--captured", str(calibrated), "rms_norm", "rotate_qk"]
    assert main([*argv, "--output", str(output)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "calibrated" in printed[0] and "calibrated" not in printed[1]
    carried = json.loads((output / "rms_norm" / PACKAGE_FILE).read_text())
    assert carried == json.loads(
        load_calibration(calibrated).operators["rms_norm"].model_dump_json()
    )
    assert not (output / "rotate_qk" / PACKAGE_FILE).exists()


def test_a_changed_reference_makes_generate_and_tune_all_refuse_in_one_line(
    calibrated, tmp_path, capsys
):
    stale = tmp_path / "stale"
    shutil.copytree(calibrated, stale)
    document = json.loads((stale / CALIBRATION_FILE).read_text())
    document["operators"]["rms_norm"]["reference_sha256"] = "0" * 64
    (stale / CALIBRATION_FILE).write_text(json.dumps(document))
    runs = tmp_path / "runs"
    commands = [
        ["generate", "--captured", str(stale), "--output", str(tmp_path / "tasks")],
        ["tune-all", "--captured", str(stale), "--runs-dir", str(runs), "--target", str(stale)],
    ]
    for argv in commands:
        assert main(argv) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and "reference of rms_norm changed" in error[0], error
        assert "controller calibrate" in error[0]
    assert not (tmp_path / "tasks").exists() and not runs.exists()


@pytest.mark.slow
def test_the_evaluator_passes_the_baseline_and_refuses_a_lower_precision_kernel(
    calibrated, tmp_path
):
    from gates.evaluator.evaluation import evaluate
    from gates.tasks.solution import load_solution

    output = tmp_path / "tasks"
    assert (
        main(["generate", "--captured", str(calibrated), "rms_norm", "--output", str(output)]) == 0
    )
    task = output / "rms_norm"
    baseline = evaluate(task, task / "solution", device="cpu", timeout=240)
    assert baseline.status == "PASSED", baseline.reason
    document = json.loads(load_solution(task / "solution").model_dump_json())
    once = "y = round_to_bfloat16(x * inverse_rms[:, None] * weight[None, :])"
    in_steps = (
        "y = round_to_bfloat16(round_to_bfloat16(x * inverse_rms[:, None]) * weight[None, :])"
    )
    for source in document["sources"]:
        if source["path"].endswith("rms_norm.py"):
            assert once in source["content"]
            source["content"] = source["content"].replace(once, in_steps)
    document["name"] = "rms_norm_in_bfloat16_steps"
    candidate = tmp_path / "in_steps.json"
    candidate.write_text(json.dumps(document))
    result = evaluate(task, candidate, device="cpu", timeout=240)
    assert result.status == "INCORRECT_NUMERICAL", result.reason
    assert "against FP64" in result.reason  # the rule itself, before the calibrated check


def test_bad_calibrate_input_is_one_line_and_exit_2(calibrated, tmp_path, capsys):
    refusals = [
        ([str(tmp_path / "missing")], "holds no capture.json"),
        ([str(calibrated), "--operators", "linear"], "holds no call of 'linear'"),
        ([str(calibrated), "--margin", "-0.5"], "give a margin of zero or more"),
    ]
    for argv, message in refusals:
        assert main(["calibrate", *argv, "--device", "cpu"]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and message in error[0], error
