"""A captured output layout the production kernel does not produce: the capture records both,
the generated baseline places its outputs in the model's layout, and the evaluator holds every
solution to it (a solution returning the production kernel's row-major rows is rejected)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gates.evaluator.captured_cases import case_inputs, load_captured
from gates.evaluator.cases import plan_cases
from gates.evaluator.loading import import_entry, write_sources
from gates.tasks.captured import LAYOUTS_FILE
from gates.tasks.package import load_task
from gates.tasks.solution import load_solution
from operators import REGISTRY
from operators.call_capture import load_capture

sys.path.insert(0, str(Path(__file__).parent))
from capture_drivers import HIDDEN, captured_package, tokens_first_residual  # noqa: E402

MODEL_STRIDES = (HIDDEN, 2 * HIDDEN, 1)  # tokens-first rows, as the reference returned them
PRODUCTION_STRIDES = (3 * HIDDEN, HIDDEN, 1)  # row-major, as the production kernel returns


@pytest.fixture(scope="module")
def tokens_first(tmp_path_factory) -> Path:
    """gated_residual's package from a capture whose output layout the production lacks."""
    root = tmp_path_factory.mktemp("tokens_first")
    return captured_package(root, "gated_residual", tokens_first_residual, 5)


def test_the_capture_records_that_the_production_layout_differs(tokens_first):
    (layout,) = load_capture(tokens_first.parent.parent / "capture").layouts
    assert layout.count == 2 and layout.production_layout_differs
    assert layout.outputs[0].strides == MODEL_STRIDES
    assert layout.production_outputs[0].strides == PRODUCTION_STRIDES
    (described,) = json.loads((tokens_first / LAYOUTS_FILE).read_text())["workloads"]
    assert described["production_layout_differs"] is True
    task = load_task(tokens_first)
    assert f"strides {MODEL_STRIDES}" in task.definition.outputs["out"].description


def test_the_baseline_places_its_output_in_the_captured_layout(tokens_first, tmp_path):
    baseline = load_solution(tokens_first / "solution")
    assert baseline.spec.entry_point.endswith("::gated_residual_captured")
    try:
        import flashinfer_bench.data as data  # installed by scripts/setup
    except ImportError:
        data = None
    if data is not None:
        document = json.loads((tokens_first / "solution" / "solution.json").read_text())
        data.Solution.model_validate(document)
    entry = tokens_first / "solution" / baseline.spec.entry_file
    for command in (["check", "--no-cache"], ["format", "--check", "--no-cache"]):
        ruff = [sys.executable, "-m", "ruff", *command, str(entry)]
        assert subprocess.run(ruff, capture_output=True).returncode == 0, command
    function = import_entry(baseline, write_sources(baseline, tmp_path / "s"), "placing")
    declaration = REGISTRY.declaration("gated_residual")
    captured = load_captured(tokens_first)
    request = type("Request", (), {"task": str(tokens_first)})()
    cases = [case for case in plan_cases(declaration, "n", "cpu", tuple(captured)) if case.captured]
    assert {case.fixture for case in cases} == {True, False}
    for case in cases:
        inputs = case_inputs(declaration, case, torch.device("cpu"), request, captured)
        out = function(*inputs)
        assert out.stride() == MODEL_STRIDES, case.key
        assert torch.equal(out, declaration.reference(*inputs)), case.key
    row_major = function(*(tensor.contiguous() for tensor in inputs))
    assert row_major.stride() == PRODUCTION_STRIDES  # another layout: the kernel's own output


@pytest.mark.slow
def test_the_evaluator_holds_solutions_to_the_captured_output_layout(tokens_first, tmp_path):
    from gates.evaluator.evaluation import evaluate

    placed = evaluate(tokens_first, tokens_first / "solution", device="cpu", timeout=240)
    assert placed.status == "PASSED", placed.reason
    document = json.loads(load_solution(tokens_first / "solution").model_dump_json())
    entry_file = document["spec"]["entry_point"].split("::")[0]
    document["spec"]["entry_point"] = f"{entry_file}::gated_residual_triton"
    document["name"] = "gated_residual_row_major"
    row_major = tmp_path / "row_major.json"
    row_major.write_text(json.dumps(document))
    result = evaluate(tokens_first, row_major, device="cpu", timeout=240)
    assert result.status == "INCORRECT_SHAPE", result.reason
    assert "-captured-" in result.reason and "output out has strides" in result.reason
    assert f"{PRODUCTION_STRIDES}" in result.reason and f"{MODEL_STRIDES}" in result.reason


def test_a_captured_export_installs_verified_on_the_captured_layouts(tokens_first, tmp_path):
    from types import SimpleNamespace

    from controller.cli import main
    from controller.flows.tune_export import export_best
    from controller.flows.tune_incumbents import Incumbent
    from operators.environment import current_environment_identity
    from operators.selection import KernelSelection

    run_dir = tmp_path / "run"  # as a tune run leaves it: its task copy beside the export
    shutil.copytree(tokens_first, run_dir / "prepared" / "task")
    shutil.copytree(tokens_first / "solution", tmp_path / "incumbent" / "solution")
    manifest = SimpleNamespace(
        run_id="tune-20261201T000000Z-abcdef",
        work_item={"task_digest": load_task(tokens_first).digest},
        environment=current_environment_identity().model_dump(),
    )
    evaluation = {"device": "cpu", "status": "PASSED", "operator": "gated_residual"}
    incumbent = Incumbent(attempt=1, folder=tmp_path / "incumbent", evaluation=evaluation)
    export_best(SimpleNamespace(run_dir=run_dir, manifest=manifest), "gated_residual", incumbent)
    tuned = tmp_path / "tuned"
    install = ["install", str(run_dir / "export"), "--profile", "ours", "--tuned-root", str(tuned)]
    assert main(install) == 0
    resolved = KernelSelection("ours", tuned_root=tuned, allow_unverified=True).resolve(
        "gated_residual"
    )
    residual, update = (torch.randn(3, 2, HIDDEN).to(torch.bfloat16).transpose(0, 1) for _ in "ab")
    gate = torch.randn(2, HIDDEN).to(torch.bfloat16)
    assert resolved.tuned.applies(residual, update, gate)  # the captured layout, verified
    assert not resolved.tuned.applies(residual.contiguous(), update.contiguous(), gate)
    assert resolved(residual, update, gate).stride() == MODEL_STRIDES
