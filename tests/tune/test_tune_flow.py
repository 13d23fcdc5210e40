"""The tune flow end to end on the real engine, agents and gates, with timing faked only at
the evaluator boundary: rejection feedback, promotion, patience, export, status, resume checks."""

import hashlib
import json
import re
import sys
from pathlib import Path
from unittest.mock import ANY

import pytest
from tune_fixtures import FakeEvaluator, journal, mark, only_run, tune_arguments, write_script

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "review_page"))

from page_in_browser import assert_charts_drew, open_review_page  # noqa: E402

from controller.cli.runs_command import run_status
from controller.cli.tune_command import run_tune
from controller.errors import ControllerError
from controller.runs.store import RunStore


@pytest.fixture(scope="module")
def scripted_run(tune_target, tmp_path_factory):
    """Contract break, slower, faster (promoted), then three no better: patience 3 ends it."""
    folder = tmp_path_factory.mktemp("scripted")
    script = write_script(
        folder / "session.json",
        [mark("incorrect")],
        [mark("factor=1.10")],
        [mark("factor=0.85")],
        [mark("factor=0.84")],
        [mark("factor=0.86")],
        [mark("factor=0.85")],
    )
    arguments = tune_arguments(
        folder / "runs",
        tune_target,
        operator="rms_norm",
        agent=f"scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=8,
        patience=3,
    )
    evaluator = FakeEvaluator()
    code = run_tune(arguments, evaluator=evaluator)
    return code, only_run(folder / "runs"), evaluator


def test_rejections_feed_back_then_a_promotion_then_patience_ends_the_run(scripted_run):
    code, run_dir, evaluator = scripted_run
    assert code == 0
    state = json.loads((run_dir / "state.json").read_text())
    assert state["state"] == "done"
    assert state["reason"].startswith("patience reached: 3 attempts in a row")
    transitions = [(e["from"], e["to"]) for e in journal(run_dir) if e["kind"] == "transition"]
    assert transitions.count(("checking", "promoted")) == 1
    verdicts = {
        number: json.loads((run_dir / "attempts" / f"{number:04d}" / "check.json").read_text())
        for number in range(1, 7)
    }
    assert [len(v["gates"]) for v in verdicts.values()] == [3, 4, 4, 4, 4, 4]
    second_prompt = (run_dir / "attempts" / "0002" / "prompt.md").read_text()
    assert "**correctness**: INCORRECT_NUMERICAL: y: 17 of 51200 elements" in second_prompt
    assert "| action_b1 | tokens=50 | 10 | not timed yet |" in second_prompt
    third_prompt = (run_dir / "attempts" / "0003" / "prompt.md").read_text()
    assert "**latency**: not promoted:" in third_prompt
    assert re.search(
        r"\| action_b1 \| tokens=50 \| 10 \| 1\.50 \| 1\.50 \| 0\.3\d \|", third_prompt
    )
    fourth_prompt = (run_dir / "attempts" / "0004" / "prompt.md").read_text()
    assert re.search(r"\| action_b1 \| tokens=50 \| 10 \| 1\.50 \| 1\.2\d \|", fourth_prompt)
    assert "worst against the baseline: " in third_prompt
    fourth = json.loads((run_dir / "attempts" / "0004" / "verdicts" / "latency.json").read_text())
    assert not fourth["passed"] and "worst against the incumbent" in fourth["summary"]
    assert evaluator.calls[3]["incumbent"] is not None  # timed against attempt 3 as well
    assert sorted(p.name for p in (run_dir / "incumbents").iterdir()) == ["0000", "0003"]


def test_the_export_holds_the_promoted_solution_its_evaluation_and_checksums(scripted_run):
    _, run_dir, _ = scripted_run
    export = run_dir / "export"
    published = json.loads((run_dir / "publish.json").read_text())
    assert published["export"] == str(export) and published["attempt"] == 3
    entry = (export / "solution" / "operators" / "catalog" / "rms_norm.py").read_text()
    assert "# fake-evaluator: factor=0.85" in entry
    manifest = json.loads((export / "solution" / "solution.json").read_text())
    assert manifest["name"] == f"rms_norm_tuned_{run_dir.name}"
    evaluation = json.loads((export / "evaluations" / "attempt-0003.json").read_text())
    assert evaluation["timing"]["promotion"]["promoted"] is True
    checksums = json.loads((export / "checksums.json").read_text())
    files = sorted(
        p.relative_to(export).as_posix()
        for p in export.rglob("*")
        if p.is_file() and p.name != "checksums.json"
    )
    assert sorted(checksums) == files
    for path, digest in checksums.items():
        assert hashlib.sha256((export / path).read_bytes()).hexdigest() == digest
    assert not (run_dir / "export.partial").exists()


def test_report_and_status_show_the_incumbent_history_and_the_stop_reason(scripted_run):
    _, run_dir, _ = scripted_run
    report = (run_dir / "evidence" / "report.md").read_text()
    assert "### Incumbent history" in report and "| 3 | x1.1" in report
    assert "| 1 | rejected | correctness | INCORRECT_NUMERICAL" in report
    assert "| 2 | rejected | latency | not promoted" in report
    assert "- controller overhead per attempt (all but the agent and the evaluator)" in report
    tuning = json.loads((run_dir / "evidence" / "tuning.json").read_text())
    assert sorted(tuning["controller_overhead_s"]) == ["1", "2", "3", "4", "5", "6"]
    svg = (run_dir / "evidence" / "latency.svg").read_text()
    assert (
        svg.startswith("<svg") and svg.count("<circle") == 4 * 5
    )  # 4 workloads x 5 timed attempts
    status = run_status(RunStore(run_dir))
    assert status["tune"]["incumbent_attempt"] == 3
    assert status["tune"]["weighted_speedup"] == pytest.approx(1 / 0.85, rel=0.02)
    assert "stopped: patience reached" in status["tune"]["line"]


def test_the_review_page_opens_in_a_browser_with_every_attempt_gate_and_chart(
    scripted_run, tmp_path
):
    """The page the run wrote, as Chromium renders it: no console error, the six attempts with
    the gates each ran, the speedup, per-attempt latency and model-time charts drawn."""
    _, run_dir, _ = scripted_run
    page = run_dir / "evidence" / "report.html"
    assert page.stat().st_size < 2_000_000
    seen, load = open_review_page(page, tmp_path / "tune.png")
    assert load.errors == []
    assert load.load_seconds < 5
    assert seen["external"] == []
    checks = {
        number: json.loads((run_dir / "attempts" / f"{number:04d}" / "check.json").read_text())
        for number in range(1, 7)
    }
    shown = {attempt["number"]: attempt for attempt in seen["attempts"]}
    assert sorted(shown) == list(range(1, 7))
    for number, check in checks.items():
        gates = shown[number]["gates"]
        assert [gate["gate"] for gate in gates] == check["gates"]
        assert [gate["outcome"] == "pass" for gate in gates] == [
            verdict["passed"] for verdict in check["verdicts"]
        ]
        assert all(gate["details"] > 2 for gate in gates)
    assert shown[1]["gates"][-1] == {"gate": "correctness", "outcome": "fail", "details": ANY}
    assert shown[3]["status"] == "accepted" and shown[6]["diffLines"] > 0
    assert seen["transcripts"] == 6 and seen["manifest"]
    charts = {chart["chart"]: chart for chart in seen["charts"]}
    assert sorted(charts) == [
        "latency-attempt-2",
        "latency-attempt-3",
        "latency-attempt-4",
        "latency-attempt-5",
        "latency-attempt-6",
        "model-time",
        "speedup-by-attempt",
    ]
    assert charts["speedup-by-attempt"]["declaredPoints"] == 4 * 5  # workloads x timed attempts
    assert charts["latency-attempt-4"]["declaredPoints"] == 4 * 3  # and three roles
    assert_charts_drew(seen)


@pytest.mark.parametrize(
    ("option", "value", "field"),
    [
        ("agent", "autotune", "agent.spec"),
        ("operator", "gated_gelu", "work_item.operator"),
        ("max_attempts", 9, "limits.max_attempts"),
        ("patience", 5, "work_item.patience"),
    ],
)
def test_resume_refuses_a_changed_option_naming_the_field(scripted_run, option, value, field):
    _, run_dir, _ = scripted_run
    arguments = tune_arguments(run_dir.parent, resume=run_dir, **{option: value})
    with pytest.raises(ControllerError, match=f"manifest field '{field}'"):
        run_tune(arguments, evaluator=FakeEvaluator())


def test_resume_refuses_a_task_package_with_another_digest(scripted_run, tmp_path):
    import shutil

    _, run_dir, _ = scripted_run
    task = shutil.copytree(run_dir / "prepared" / "task", tmp_path / "task")
    contract = json.loads((task / "contract.json").read_text())
    contract["roundings"] *= 4  # another contract is another task
    (task / "contract.json").write_text(json.dumps(contract))
    arguments = tune_arguments(run_dir.parent, resume=run_dir, task=task)
    with pytest.raises(ControllerError, match="manifest field 'work_item.task_digest'"):
        run_tune(arguments, evaluator=FakeEvaluator())


def test_edits_outside_the_solution_sources_are_rejected_by_scope(tune_target, tmp_path):
    """Even unfenced: the task package, solution.json, history and new files are the
    controller's; its own task copy is never what the agent edited."""
    script = write_script(
        tmp_path / "session.json",
        [mark("factor=0.5"), {"tool": "write", "path": "task/contract.json", "content": "{}"}],
        [
            {
                "tool": "edit",
                "path": "solution/solution.json",
                "old": "rms_norm_baseline",
                "new": "fast",
            }
        ],
        [{"tool": "write", "path": "evaluator.py", "content": "PROMOTE = True\n"}],
        [mark("factor=0.5"), {"tool": "write", "path": "history/attempts.json", "content": "[]"}],
    )
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="rms_norm",
        agent=f"scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=4,
    )
    evaluator = FakeEvaluator()
    assert run_tune(arguments, evaluator=evaluator) == 1
    run_dir = only_run(tmp_path / "runs")
    expected = ["task/contract.json", "solution/solution.json", "evaluator.py", "history/"]
    for number, path in enumerate(expected, start=1):
        scope = json.loads(
            (run_dir / "attempts" / f"{number:04d}" / "verdicts" / "scope.json").read_text()
        )
        assert not scope["passed"] and path in scope["summary"], scope["summary"]
    assert evaluator.calls == []  # nothing past scope was evaluated
    manifest = RunStore(run_dir).manifest()
    from controller.flows.tune import task_package_digest

    assert task_package_digest(run_dir / "prepared" / "task") == manifest.work_item["task_digest"]
    assert json.loads((run_dir / "prepared" / "task" / "contract.json").read_text()) != {}


def test_a_reached_target_speedup_stops_the_run_and_exports(tune_target, tmp_path):
    script = write_script(tmp_path / "session.json", [mark("factor=0.5")], [mark("factor=0.4")])
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="rms_norm",
        agent=f"scripted:{script}",
        unfenced=True,
        device="cuda",
        target_speedup=1.5,
    )
    assert run_tune(arguments, evaluator=FakeEvaluator()) == 0
    run_dir = only_run(tmp_path / "runs")
    state = json.loads((run_dir / "state.json").read_text())
    assert state["state"] == "done" and state["limit"] == "target_speedup"
    reached = re.match(r"target speedup reached: x([0-9.]+) over production", state["reason"])
    assert reached and abs(float(reached.group(1)) - 2.0) < 0.02, state["reason"]  # 2x, noisy
    assert not (run_dir / "attempts" / "0002").exists()
    assert json.loads((run_dir / "publish.json").read_text())["attempt"] == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--operator", "no_such_op"], "unknown operator 'no_such_op'; use one of: "),
        (["--operator", "rms_norm", "--patience", "0"], "--patience must be at least 1, not 0"),
        (["--operator", "rms_norm", "--target-speedup", "0.9"], "--target-speedup must be above 1"),
        (["--operator", "rms_norm", "--agent", "autotune:x"], "positive integer"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(tune_target, tmp_path, capsys, options, message):
    from controller.cli import main

    argv = ["tune", "run", "--target", str(tune_target), "--runs-dir", str(tmp_path), *options]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("controller: error: ") and message in error
    assert len(error.splitlines()) == 1


def test_a_cpu_run_draws_no_empty_chart_and_says_why(tune_target, tmp_path):
    script = write_script(tmp_path / "session.json", [mark("factor=0.5")])
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="rms_norm",
        agent=f"scripted:{script}",
        unfenced=True,
        device="cpu",
        max_attempts=1,
    )
    assert run_tune(arguments, evaluator=FakeEvaluator()) == 1  # nothing timed, none promoted
    evidence = only_run(tmp_path / "runs") / "evidence"
    assert not (evidence / "latency.svg").exists()
    report = (evidence / "report.md").read_text()
    assert "No chart: no attempt was timed (timing needs CUDA)." in report
    assert "[report.html](report.html)" in report
    page = (evidence / "report.html").read_text()
    assert "No attempt was timed" in page and "data:image/svg+xml" not in page
