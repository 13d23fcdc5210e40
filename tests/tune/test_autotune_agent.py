"""The autotune agent: its search plan, its source rewrite, and a run through the real engine
and gates (timing faked at the evaluator boundary); plus A/A: the baseline never promotes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tune_fixtures import FakeEvaluator, fake_timing, only_run, tune_arguments

from controller.agents import make_agent
from controller.agents.autotune_search import plan_points
from controller.cli.tune_command import run_tune
from controller.errors import ControllerError
from gates.tuning.launch_settings import DeclaredSettings, declared_settings, with_point
from gates.tuning.reading import read_evaluation
from gates.tuning.verdicts import latency_verdict

SPACE = DeclaredSettings(
    point={"rows": 1, "warps": 4},
    space={"rows": (1, 2, 4), "warps": (2, 4, 8)},
)


def test_the_plan_tries_the_nearest_steps_first_then_two_settings_skipping_what_was_tried():
    plan = plan_points(SPACE, [], 10)
    assert plan.points[:4] == [
        {"rows": 2, "warps": 4},  # one step up each setting
        {"rows": 1, "warps": 8},
        {"rows": 1, "warps": 2},  # one step down
        {"rows": 4, "warps": 4},  # two steps
    ]
    assert plan.points[4] == {"rows": 2, "warps": 8}  # then two settings at once
    history = [{"attempt": 1, "outcome": "rejected", "gate": "latency", "tuning": plan.points[0]}]
    assert plan_points(SPACE, history, 1).points == [{"rows": 1, "warps": 8}]


def test_a_value_that_broke_the_contract_is_pruned_unless_a_passing_point_used_it():
    broken = {"attempt": 1, "gate": "correctness", "status": "COMPILE_ERROR"}
    history = [{**broken, "tuning": {"rows": 4, "warps": 8}}]
    plan = plan_points(SPACE, history, 20)
    assert all(p["rows"] != 4 and p["warps"] != 8 for p in plan.points)
    assert plan.pruned == ["rows=4", "warps=8"]
    vouched = [*history, {"attempt": 2, "gate": "latency", "tuning": {"rows": 1, "warps": 8}}]
    assert plan_points(SPACE, vouched, 20).pruned == ["rows=4"]
    detected = [{"attempt": 1, "gate": "correctness", "status": "REJECTED", "tuning": {"rows": 4}}]
    assert plan_points(SPACE, detected, 20).pruned == []  # a detector's finding is no verdict


def test_a_rewritten_point_stays_ruff_clean_for_every_catalog_kernel(tmp_path):
    from operators.catalog import CATALOG

    root = Path(__file__).resolve().parents[2]
    for declaration in CATALOG:
        source = Path(sys.modules[declaration.preferred.__module__].__file__).read_text()
        settings = declared_settings(source)
        assert with_point(source, settings.point) == source
        far = settings.neighbours(settings.point, 2)[-1]
        rewritten = with_point(source, far)
        assert declared_settings(rewritten).point == far
        (tmp_path / f"{declaration.name}.py").write_text(rewritten)
    ruff = [sys.executable, "-m", "ruff"]
    config = ["--no-cache", "--config", str(root / "pyproject.toml"), str(tmp_path)]
    assert (
        subprocess.run([*ruff, "format", "--check", *config], capture_output=True).returncode == 0
    )
    assert subprocess.run([*ruff, "check", *config], capture_output=True).returncode == 0


def test_the_agent_spec_takes_points_per_attempt():
    assert make_agent("autotune").points_per_attempt == 1
    assert make_agent("autotune:3").spec == "autotune:3"
    with pytest.raises(ControllerError, match="positive integer"):
        make_agent("autotune:many")


@pytest.mark.parametrize("seed", range(40))
def test_a_a_the_baseline_as_candidate_never_promotes(tmp_path_factory, seed):
    task = _task(tmp_path_factory)
    for roles in (
        {"baseline": 1.0, "candidate": 1.0},
        {"baseline": 1.0, "candidate": 1.0, "incumbent": 1.0},
    ):
        timing = fake_timing(task, roles, f"a-a-{seed}")
        reading = read_evaluation({"status": "PASSED", "device": "cuda", "timing": timing})
        assert latency_verdict(reading).passed is False


def _task(factory) -> Path:
    folder = factory.getbasetemp() / "rms_norm_task"
    if not folder.is_dir():
        from gates.tasks.generation import write_package
        from operators import REGISTRY

        write_package(REGISTRY.declaration("rms_norm"), factory.getbasetemp())
        (factory.getbasetemp() / "rms_norm").rename(folder)
    return folder


def test_autotune_runs_the_search_through_the_gates(tune_target, tmp_path):
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="rms_norm",
        unfenced=True,
        device="cuda",
        max_attempts=2,
    )
    assert run_tune(arguments, evaluator=FakeEvaluator()) == 1  # A/A points: none promoted
    run_dir = only_run(tmp_path / "runs")
    tried = json.loads((run_dir / "evidence" / "tuning.json").read_text())["attempts"]
    assert [(a["tuning"]["rows_per_program"], a["tuning"]["num_warps"]) for a in tried] == [
        (2, 4),
        (1, 8),
    ]
    assert {a["gate"] for a in tried} == {"latency"}
    transcript = json.loads((run_dir / "attempts" / "0002" / "transcript.json").read_text())
    plan = next(step for step in transcript if step.get("step") == "plan")
    assert plan["tried"] == 1 and plan["points"] == [tried[1]["tuning"]]
    report = (run_dir / "evidence" / "report.md").read_text()
    assert "### Launch settings tried" in report
