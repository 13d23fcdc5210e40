"""The evaluator on a captured task: the captured layouts (strides included) and fixtures are
cases, so a kernel right only on row-major inputs is rejected there, and timing runs the
captured workloads, weighted by call count, in their layouts."""

import json
import sys
from pathlib import Path

import pytest
import torch

from gates.evaluator.captured_cases import case_inputs, load_captured, timed_declaration
from gates.evaluator.cases import plan_cases
from gates.tasks.solution import load_solution
from operators import REGISTRY

sys.path.insert(0, str(Path(__file__).parent))
from capture_drivers import captured_package, strided_rms_norm  # noqa: E402


@pytest.fixture(scope="module")
def strided_task(tmp_path_factory) -> Path:
    """rms_norm's package from a capture whose main layout has rows twice as far apart."""
    return captured_package(tmp_path_factory.mktemp("strided"), "rms_norm", strided_rms_norm, 3)


def test_captured_cases_take_the_captured_strides_and_fixtures(strided_task):
    declaration = REGISTRY.declaration("rms_norm")
    captured = load_captured(strided_task)
    cases = plan_cases(declaration, "nonce", "cpu", tuple(captured))
    chosen = [case for case in cases if case.captured]
    assert len(chosen) == 2 * len(captured) and any(case.fixture for case in chosen)
    request = type("Request", (), {"task": str(strided_task)})()
    strided = [case for case in chosen if case.axes["tokens"] == 4]
    for case in strided:
        x, weight = case_inputs(declaration, case, torch.device("cpu"), request, captured)
        assert x.shape == (4, 32) and x.stride() == (64, 1)
        assert weight.shape == (32,)
    assert plan_cases(declaration, "nonce", "cpu") == [c for c in cases if not c.captured]


def test_timing_runs_the_captured_workloads_weighted_by_count_in_their_layouts(strided_task):
    from gates.evaluator.fresh_pool import FreshPool

    declaration = REGISTRY.declaration("rms_norm")
    captured = load_captured(strided_task)
    timed = timed_declaration(declaration, captured)
    names = [c.uuid.removeprefix("rms_norm-") for c in captured]  # as traces.py names rows
    assert [(w.name, w.weight) for w in timed.workloads] == [(name, 2.0) for name in names]
    assert timed.params == declaration.params and timed.contract == declaration.contract
    assert timed_declaration(declaration, []) is declaration
    strided = next(w for w in timed.workloads if w.axes["tokens"] == 4)
    sets = timed.make_input_sets(strided, 3, 7)
    plain = declaration.make_input_sets(strided, 3, 7)
    for (x, weight), (plain_x, plain_weight) in zip(sets, plain, strict=True):
        assert x.stride() == (64, 1) and torch.equal(x, plain_x)
        assert torch.equal(weight, plain_weight)
    baseline = declaration.preferred
    pool = FreshPool(timed, strided, baseline, (0, 1), 2, torch.device("cpu"))
    assert [inputs[0].stride() for inputs in pool.sets] == [(64, 1), (64, 1)]
    assert [tuple(outputs[0].shape) for outputs in pool.expected] == [(4, 32), (4, 32)]


@pytest.mark.slow
def test_a_kernel_right_only_on_row_major_rows_is_rejected_on_the_captured_layout(
    strided_task, tmp_path
):
    from gates.evaluator.evaluation import evaluate

    baseline = load_solution(strided_task / "solution")
    document = json.loads(baseline.model_dump_json())
    for source in document["sources"]:
        if source["path"].endswith("rms_norm.py"):
            assert "rows.stride(0)," in source["content"]
            source["content"] = source["content"].replace("rows.stride(0),", "hidden,")
    document["name"] = "rms_norm_dense_rows_only"
    bad = tmp_path / "dense_rows_only.json"
    bad.write_text(json.dumps(document))
    result = evaluate(strided_task, bad, device="cpu", timeout=240)
    assert result.status in ("INCORRECT_NUMERICAL", "REJECTED"), result.reason
    assert "-captured-" in result.reason  # a captured case, not a drawn row-major one


@pytest.mark.gpu
def test_on_cuda_a_captured_task_is_timed_on_its_captured_workloads(strided_task):
    from gates.evaluator.evaluation import evaluate

    result = evaluate(strided_task, strided_task / "solution", device="cuda", timeout=300)
    assert result.status == "PASSED", result.reason
    rows = result.timing.workloads
    captured = load_captured(strided_task)
    assert set(rows) == {item.uuid.removeprefix("rms_norm-") for item in captured}
    assert {row.weight for row in rows.values()} == {2.0}
