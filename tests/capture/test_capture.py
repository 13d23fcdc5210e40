"""capture-ops and generate --captured on real registry calls: counts from the model's
structure, fixtures bit for bit, packages that load with weights equal to the counts."""

import json
from pathlib import Path

import pytest
import torch

from examples.config import TINY
from gates.tasks.captured import LAYOUTS_FILE
from gates.tasks.generation import write_package
from gates.tasks.package import load_task
from operators import REGISTRY, record_registry_calls
from operators.call_capture import CallCapture, load_capture, load_fixture
from operators.layouts import layout_of
from operators.safetensors_file import load_tensors


def expected_counts(steps: int) -> dict[str, int]:
    """Calls per forward pass of the example, read off its structure, times the steps."""
    layers, denoise = TINY.expert_layers, TINY.denoise_steps
    per_forward = {
        "rms_norm": 2 * TINY.prefix_layers,
        "ada_rms_norm": denoise * (layers + 1),
        "gated_residual_norm": denoise * layers,  # after attention, with the MLP's norm
        "gated_down_projection": denoise * layers,
        "gated_gelu_projection": TINY.prefix_layers + denoise * layers,
        "qkv_projection": TINY.prefix_layers + denoise * layers,
        "attention_output": TINY.prefix_layers + denoise * layers,
        "rotate_qk": TINY.prefix_layers + denoise * layers,
        "split_kv_attention": TINY.prefix_layers + denoise * layers,
        "modulation_over_steps": 2 * layers,  # every step's modulations, before the steps
    }
    return {name: count * steps for name, count in per_forward.items()}


def test_counts_follow_the_model_structure(tiny_capture):
    capture = load_capture(tiny_capture)
    assert capture.steps == 2
    assert capture.counts_by_operator() == expected_counts(capture.steps)


def test_aliasing_and_output_layouts_are_recorded(tiny_capture):
    capture = load_capture(tiny_capture)
    attention = [layout for layout in capture.layouts if layout.operator == "split_kv_attention"]
    prefix = [layout for layout in attention if layout.inputs["k_cache"].shape[2] == 0]
    assert [layout.aliases for layout in prefix] == [[["k_cache", "v_cache"]]]
    assert all(layout.scalars == {"scale": TINY.attention_scale} for layout in attention)
    for layout in capture.layouts:
        assert layout.outputs and not layout.production_layout_differs


def test_fixtures_round_trip_bit_for_bit(tmp_path):
    originals = {}

    def keep(name, args, kwargs, result):
        originals.setdefault(len(originals), [a.clone() for a in args])

    from capture_drivers import strided_rms_norm

    capture = CallCapture()
    with record_registry_calls(observer=capture), record_registry_calls(observer=keep):
        torch.manual_seed(1)
        strided_rms_norm()
    written = capture.write(tmp_path, "capture_drivers:strided_rms_norm", [], 1)
    assert [layout.count for layout in written.layouts] == [2, 2]  # strided; size-one batch
    strided = next(layout for layout in written.layouts if layout.inputs["x"].shape[0] == 4)
    assert strided.inputs["x"].strides == (2 * 32, 1)
    loaded = load_fixture(tmp_path, strided)
    assert loaded["x"].stride() == (64, 1)
    assert layout_of(loaded["x"]) == strided.inputs["x"]
    x, weight = originals[0]
    for got, want in ((loaded["x"], x), (loaded["weight"], weight)):
        assert got.dtype == want.dtype and torch.equal(
            got.view(torch.int16), want.view(torch.int16)
        )
    raw = load_tensors(tmp_path / strided.fixture)
    assert raw["x"].is_contiguous() and torch.equal(raw["x"], x)


def test_captured_packages_load_with_weights_equal_to_counts(tiny_capture, tmp_path):
    from gates.tasks.captured import render_captured_package

    capture = load_capture(tiny_capture)
    for name, count in capture.counts_by_operator().items():
        declaration = REGISTRY.declaration(name)
        files = render_captured_package(declaration, tiny_capture)
        folder, _ = write_package(declaration, tmp_path, files=files)
        task = load_task(folder)
        assert "captured" in task.definition.tags
        assert sum(trace.weight for trace in task.workloads) == count
        for trace in task.workloads:
            for value in trace.workload.inputs.values():
                if value.type == "safetensors":
                    assert (folder / value.path).is_file()
        described = json.loads((folder / LAYOUTS_FILE).read_text())
        assert {item["count"] for item in described["workloads"]} <= {
            trace.weight for trace in task.workloads
        }
        data = _flashinfer_bench()
        if data is not None:
            data.Definition.model_validate(json.loads((folder / "definition.json").read_text()))
            for line in (folder / "workloads.jsonl").read_text().splitlines():
                data.Trace.model_validate_json(line)


def test_a_non_contiguous_layout_is_carried_into_the_definition(tmp_path):
    from capture_drivers import strided_rms_norm

    from gates.tasks.captured import render_captured_package

    capture = CallCapture()
    with record_registry_calls(observer=capture):
        strided_rms_norm()
    capture.write(tmp_path / "capture", "capture_drivers:strided_rms_norm", [], 1)
    declaration = REGISTRY.declaration("rms_norm")
    files = render_captured_package(declaration, tmp_path / "capture")
    folder, _ = write_package(declaration, tmp_path / "tasks", files=files)
    task = load_task(folder)
    assert "strides (64, 1)" in task.definition.inputs["x"].description
    assert task.definition.axes["hidden"].value == 32
    described = json.loads((folder / LAYOUTS_FILE).read_text())
    strides = [item["inputs"]["x"]["strides"] for item in described["workloads"]]
    assert [64, 1] in strides


def test_bad_driver_is_one_line_and_exit_2(tmp_path, capsys):
    from controller.cli import main

    argv = ["capture-ops", "--output", str(tmp_path / "c"), "--", "no_such_module:run"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "no_such_module" in error
    assert main(["capture-ops", "--output", str(tmp_path), "--steps", "0", "--", "x:y"]) == 2


def _flashinfer_bench():
    try:
        import flashinfer_bench.data as data
    except ImportError:
        return None
    return data


@pytest.fixture(autouse=True)
def _drivers_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
