"""The autotune agent: which screened point it submits, its source rewrite, and a run through
the real engine and gates (the screen injected at the fence boundary, timing faked at the
evaluator boundary); plus A/A: the baseline never promotes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tune_fixtures import FakeEvaluator, fake_timing, only_run, tune_arguments

from controller.agents import make_agent
from controller.agents.autotune_agent import AutotuneAgent
from controller.agents.autotune_search import next_submission
from controller.cli.tune_command import run_tune
from controller.errors import ControllerError
from controller.screening.report import ScreenedPoint, ScreenReport, space_points
from gates.tuning.launch_settings import DeclaredSettings, declared_settings, with_point
from gates.tuning.reading import read_evaluation
from gates.tuning.verdicts import latency_verdict

SPACE = DeclaredSettings(
    point={"rows": 1, "warps": 4},
    space={"rows": (1, 2, 4), "warps": (2, 4, 8)},
)


def _screened(times: dict[tuple, float | None], timed: bool = True) -> ScreenReport:
    """A screen of SPACE: a time per (rows, warps), None for a point that failed to compile."""
    points = []
    for index, point in enumerate(space_points(SPACE)):
        value = times.get((point["rows"], point["warps"]), 5.0)
        if value is None:
            points.append(ScreenedPoint(index=index, point=point, status="compile_error",
                                        reason="out of resource: shared memory"))  # fmt: skip
        else:
            status = "timed" if timed else "checked"
            weighted = value if timed else None
            points.append(ScreenedPoint(index=index, point=point, status=status,
                                        weighted_us=weighted, screen_s=0.1))  # fmt: skip
    return ScreenReport(device="cuda" if timed else "cpu", timed=timed, points=points)


def test_the_space_is_every_point_incumbent_first_nearest_steps_next():
    points = space_points(SPACE)
    assert len(points) == 9 and len({json.dumps(p, sort_keys=True) for p in points}) == 9
    assert points[:4] == [
        {"rows": 1, "warps": 4},  # the incumbent
        {"rows": 2, "warps": 4},  # one step up each setting
        {"rows": 1, "warps": 8},
        {"rows": 1, "warps": 2},  # one step down
    ]


def test_the_best_screened_points_are_submitted_in_order_skipping_failures_and_the_tried():
    report = _screened({(1, 4): 5.0, (4, 8): None, (2, 8): 3.0, (4, 4): 3.5, (1, 8): 4.0})
    first = next_submission(report, SPACE.point, [], few=3)
    assert first.point == {"rows": 2, "warps": 8} and first.rank == 1  # (4, 8) failed
    history = [{"attempt": 1, "gate": "latency", "tuning": first.point}]
    second = next_submission(report, SPACE.point, history, few=3)
    assert second.point == {"rows": 4, "warps": 4} and second.submitted_before == 1
    history.append({"attempt": 2, "gate": "latency", "tuning": second.point})
    assert next_submission(report, SPACE.point, history, few=2).point is None  # few reached
    third = next_submission(report, SPACE.point, history, few=3)
    assert third.point == {"rows": 1, "warps": 8}
    history.append({"attempt": 3, "gate": "latency", "tuning": third.point})
    done = next_submission(report, SPACE.point, history, few=9)
    assert done.point is None and "faster than the incumbent" in done.reason  # rest at 5.0


def test_after_a_promotion_the_incumbent_is_the_bar_and_is_not_submitted_again():
    report = _screened({(2, 8): 3.0, (4, 4): 3.5})
    history = [{"attempt": 1, "outcome": "promoted", "tuning": {"rows": 2, "warps": 8}}]
    nxt = next_submission(report, {"rows": 2, "warps": 8}, history, few=3)
    assert nxt.point is None and "3.000 us" in nxt.reason  # (4, 4) screened slower


def test_without_timing_passing_points_go_nearest_first():
    report = _screened({(2, 4): None}, timed=False)
    assert next_submission(report, SPACE.point, [], few=3).point == {"rows": 1, "warps": 8}


def test_an_interpreter_screen_that_reached_no_point_falls_back_to_the_nearest_untried_point():
    points = [
        ScreenedPoint(index=i, point=p, status="not_screened", reason="budget")
        for i, p in enumerate(space_points(SPACE))
    ]
    report = ScreenReport(device="cpu", timed=False, points=points)
    chosen = next_submission(report, SPACE.point, [], few=3)
    assert chosen.point == {"rows": 2, "warps": 4} and "reached no point" in chosen.reason


def test_a_cuda_screen_that_timed_no_point_submits_nothing():
    # the incumbent compiled and passed its check, the rest were not reached: nothing timed
    points = [
        ScreenedPoint(index=i, point=p, status="checked" if i == 0 else "not_screened")
        for i, p in enumerate(space_points(SPACE))
    ]
    report = ScreenReport(device="cuda", timed=True, seconds=17.2, points=points)
    chosen = next_submission(report, SPACE.point, [], few=3)
    assert chosen.point is None and "timed no point in its 17.2 s" in chosen.reason


def test_a_point_of_tiles_per_regime_is_rewritten_as_ruff_writes_it(tmp_path):
    # one regime's tile fits its line, the other's is split one level further
    wide = {"block_m": 128, "block_n": 128, "block_k": 128, "num_warps": 8, "num_stages": 4}
    point = {"few_rows": {"block_m": 16, "block_n": 32}, "most_rows": {**wide, "group": 8}}
    source = 'TUNING = {"few_rows": {}}\n"""The tiles."""\n'
    rewritten = with_point(source, point)
    assert declared_settings(rewritten).point == point
    assert with_point(rewritten, point) == rewritten
    (tmp_path / "tiles.py").write_text(rewritten)
    root = Path(__file__).resolve().parents[2]
    check = [sys.executable, "-m", "ruff", "format", "--check", "--no-cache"]
    check += ["--config", str(root / "pyproject.toml"), str(tmp_path)]
    assert subprocess.run(check, capture_output=True).returncode == 0


def test_a_rewritten_point_stays_ruff_clean_for_every_catalog_kernel(tmp_path):
    from operators.catalog import CATALOG

    root = Path(__file__).resolve().parents[2]
    for declaration in CATALOG:
        source = Path(sys.modules[declaration.preferred.__module__].__file__).read_text()
        settings = declared_settings(source)
        if settings.point is None:  # no settings to tune (e.g. a registered torch op)
            continue
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


def test_the_agent_spec_takes_how_many_screened_points_to_submit():
    assert make_agent("autotune").submissions == 3
    assert make_agent("autotune:5").spec == "autotune:5"
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


class ScreenAtTheFence:
    """The screen injected where the agent would run it in the fence: rows_per_program 4 and
    num_warps 8 fail to compile, the rest are timed from the point's settings."""

    def __init__(self):
        self.calls = 0

    def __call__(self, session, points, budget_s):
        self.calls += 1
        screened = []
        for index, point in enumerate(points):
            rows, warps = point["rows_per_program"], point["num_warps"]
            if rows == 4 or warps == 8:
                screened.append(ScreenedPoint(index=index, point=point, status="compile_error",
                                              reason="out of resource: registers"))  # fmt: skip
                continue
            weighted = 10.0 - rows + 0.1 * warps
            screened.append(ScreenedPoint(index=index, point=point, status="timed",
                                          weighted_us=weighted, screen_s=0.2))  # fmt: skip
        return ScreenReport(device="cuda", timed=True, seconds=1.0, points=screened)


def test_autotune_screens_once_then_submits_its_best_points_through_the_gates(
    tune_target, tmp_path
):
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="rms_norm",
        unfenced=True,
        device="cuda",
        max_attempts=4,
    )
    screen = ScreenAtTheFence()
    agent = AutotuneAgent(submissions=3, screen=screen)
    assert run_tune(arguments, agent=agent, evaluator=FakeEvaluator()) == 1  # A/A: none promoted
    assert screen.calls == 1  # the screen of attempt 1 is kept for the others
    run_dir = only_run(tmp_path / "runs")
    tried = json.loads((run_dir / "evidence" / "tuning.json").read_text())["attempts"]
    assert [(a["tuning"]["rows_per_program"], a["tuning"]["num_warps"]) for a in tried[:3]] == [
        (8, 1),  # 10 - 8 + 0.1: the fastest that compiles
        (8, 2),
        (8, 4),
    ]
    assert [a["gate"] for a in tried] == ["latency", "latency", "latency", "changes"]
    transcript = json.loads((run_dir / "attempts" / "0001" / "transcript.json").read_text())
    listed = [step for step in transcript if step.get("step") == "screened_point"]
    assert len(listed) == 20 and all("screen_s" in step for step in listed)  # every point
    assert sum(step["status"] == "compile_error" for step in listed) == 8
    later = json.loads((run_dir / "attempts" / "0004" / "transcript.json").read_text())
    choice = next(step for step in later if step.get("step") == "choose")
    assert choice["point"] is None and "best 3 points were submitted" in choice["reason"]
    evidence = run_dir / "evidence"
    screen_json = json.loads((evidence / "screen.json").read_text())
    assert len(screen_json["points"]) == 20
    assert (evidence / "screen.svg").is_file() or (evidence / "screen.png").is_file()
    report = (evidence / "report.md").read_text()
    assert "### Screen of the declared space" in report and "20 points" in report
    assert "| 1 | `" + json.dumps(tried[0]["tuning"], sort_keys=True) + "` | 2.100 |" in report


REGIMES = DeclaredSettings(
    point={"few": {"rows": 1, "warps": 4}, "many": {"rows": 4, "warps": 4}},
    space={"rows": (1, 2, 4), "warps": (2, 4, 8)},
)


def _screened_regimes(times: dict[str, float]) -> ScreenReport:
    """A timed screen of REGIMES' one-step points: a weighted time per changed (regime,
    setting=value), 5.0 for the incumbent and any point not named."""
    points = []
    for index, point in enumerate(space_points(REGIMES)):
        changed = [
            f"{regime}.{name}={value}"
            for regime, settings in point.items()
            for name, value in settings.items()
            if value != REGIMES.point[regime][name]
        ]
        weighted = times.get(",".join(changed), 5.0)
        points.append(ScreenedPoint(index=index, point=point, status="timed",
                                    weighted_us=weighted))  # fmt: skip
    return ScreenReport(device="cuda", timed=True, points=points)


def test_faster_changes_in_two_regimes_are_submitted_joined_first():
    report = _screened_regimes({"few.rows=2": 4.0, "few.warps=8": 4.4, "many.warps=8": 4.5})
    first = next_submission(report, REGIMES.point, [], few=3)
    assert first.point == {"few": {"rows": 2, "warps": 4}, "many": {"rows": 4, "warps": 8}}
    assert first.weighted_us == pytest.approx(3.5) and "joined (few, many)" in first.reason
    history = [{"attempt": 1, "gate": "latency", "tuning": first.point}]
    second = next_submission(report, REGIMES.point, history, few=3)
    assert second.point == {"few": {"rows": 2, "warps": 4}, "many": {"rows": 4, "warps": 4}}


def test_a_faster_change_in_one_regime_only_is_submitted_as_screened():
    report = _screened_regimes({"few.rows=2": 4.0})
    chosen = next_submission(report, REGIMES.point, [], few=3)
    assert chosen.point == {"few": {"rows": 2, "warps": 4}, "many": {"rows": 4, "warps": 4}}
    assert chosen.rank == 1


def test_a_cuda_screen_too_short_to_time_a_point_is_not_started_and_nothing_is_submitted(
    tmp_path_factory,
):
    from types import SimpleNamespace

    from controller.agents.autotune_agent import MIN_GPU_SCREEN_S
    from controller.agents.base import AgentLimits, AgentSession

    class Screened(Exception):
        """Raised by the injected screen: the agent started one."""

    def screen(session, points, budget_s):
        raise Screened(budget_s)

    task = _task(tmp_path_factory)
    workspace = tmp_path_factory.mktemp("short_screen")
    subprocess.run(["cp", "-r", str(task / "solution"), str(workspace)], check=True)
    kernel = next((workspace / "solution").rglob("rms_norm.py")).read_text()

    def session(wall_s: float) -> AgentSession:
        limits = AgentLimits(wall_s=wall_s)
        policy = SimpleNamespace(gpu=True)
        return AgentSession(workspace=workspace, prompt="tune", fence=None, policy=policy,
                            limits=limits)  # fmt: skip

    result = AutotuneAgent(screen=screen).run(session(MIN_GPU_SCREEN_S))
    assert any(step.get("step") == "no_screen" for step in result.transcript)
    assert result.exit_reason == "exhausted"  # the run stops: a later attempt has less time
    assert next((workspace / "solution").rglob("rms_norm.py")).read_text() == kernel
    with pytest.raises(Screened):  # a little more time: the screen starts
        AutotuneAgent(screen=screen).run(session(MIN_GPU_SCREEN_S / 0.9 + 1))

    def untimed(session, points, budget_s):  # a screen that spent its time compiling
        return ScreenReport(
            device="cuda",
            timed=True,
            seconds=budget_s,
            points=[ScreenedPoint(index=i, point=p, status="not_screened") for i, p in
                    enumerate(points)],
        )  # fmt: skip

    result = AutotuneAgent(screen=untimed).run(session(30.0))
    assert result.exit_reason == "exhausted" and "timed no point" in str(result.transcript[-1])
    assert next((workspace / "solution").rglob("rms_norm.py")).read_text() == kernel
