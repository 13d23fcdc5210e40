"""The shared run options with the real scripted agent and a real fence, and the read-only
`controller status` / `controller report` commands."""

import argparse
import json

import pytest
from engine_fixtures import GOOD, GreetingAgent, TinyFlow, make_target

from controller.cli import main
from controller.cli.new_run import NewRun
from controller.cli.run_options import add_run_options, start_or_resume
from controller.errors import ControllerError
from controller.gitrepo import git


@pytest.fixture
def target(tmp_path):
    return make_target(tmp_path / "target")


def tiny_command(argv, target, agent=None):
    parser = argparse.ArgumentParser()
    add_run_options(parser)
    arguments = parser.parse_args(argv)
    return start_or_resume(
        arguments,
        flow_name="tiny",
        make_flow=lambda work_item, gate_settings: TinyFlow(),
        new_run=lambda: NewRun(target=target, work_item={"file": "hello.txt"}),
        agent=agent,
    )


def write_script(path, *attempts):
    path.write_text(json.dumps({"attempts": [list(actions) for actions in attempts]}))
    return path


def only_run(runs_dir):
    (run_dir,) = [path for path in runs_dir.iterdir() if not path.name.startswith(".")]
    return run_dir


def test_scripted_agent_in_the_landlock_fence_gets_its_change_published(tmp_path, target):
    script = write_script(
        tmp_path / "script.json",
        [
            {"tool": "write", "path": "hello.txt", "content": "hullo\n"},
            {"tool": "bash", "command": "echo planted > .git/planted"},
        ],
        [{"tool": "write", "path": "hello.txt", "content": GOOD}],
    )
    runs_dir = tmp_path / "runs"
    argv = ["--agent", f"scripted:{script}", "--fence", "landlock", "--runs-dir", str(runs_dir)]
    assert tiny_command(argv, target) == 0
    run_dir = only_run(runs_dir)
    report = json.loads((run_dir / "evidence" / "report.json").read_text())
    assert [a["status"] for a in report["attempts"]] == ["rejected", "accepted"]
    assert report["asked"]["fence"] == {"name": "landlock", "unfenced": False}
    assert git(target, "show", f"{report['published']['branch']}:hello.txt") == GOOD
    # The fence kept the workspace's .git read-only.
    workspace = run_dir / "attempts" / "0001" / "workspace"
    assert (workspace / "hello.txt").read_text() == "hullo\n"
    assert not (workspace / ".git" / "planted").exists()
    transcript = json.loads((run_dir / "attempts" / "0001" / "transcript.json").read_text())
    assert transcript[-1]["ok"] is False or "ermission" in transcript[-1]["output"]


def test_a_missing_agent_is_refused_before_any_run_folder_exists(tmp_path, target):
    runs_dir = tmp_path / "runs"
    argv = ["--agent", f"scripted:{tmp_path / 'absent.json'}", "--unfenced"]
    with pytest.raises(ControllerError, match="cannot read agent script"):
        tiny_command([*argv, "--runs-dir", str(runs_dir)], target)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_a_new_run_needs_an_agent(tmp_path, target):
    with pytest.raises(ControllerError, match="--agent is required"):
        tiny_command(["--runs-dir", str(tmp_path / "runs")], target)


@pytest.fixture
def finished_run(tmp_path, target):
    runs_dir = tmp_path / "runs"
    argv = ["--agent", "test", "--unfenced", "--runs-dir", str(runs_dir), "--max-attempts", "1"]
    assert tiny_command(argv, target, agent=GreetingAgent(good_from=2)) == 1
    return only_run(runs_dir)


def test_status_and_report(finished_run, capsys):
    capsys.readouterr()
    assert main(["status", str(finished_run), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["state"], status["limit"], status["live_pid"]) == ("rejected", "attempts", None)
    assert status["attempts"] == [{"number": 1, "status": "rejected"}]
    assert main(["status", finished_run.name, "--runs-dir", str(finished_run.parent)]) == 0
    assert "state rejected (attempt limit reached: 1 of 1 used)" in capsys.readouterr().out
    assert main(["report", str(finished_run)]) == 0
    markdown = capsys.readouterr().out
    assert "### Attempt 1: rejected" in markdown and "FAIL **greeting**" in markdown
    assert main(["report", str(finished_run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["asked"]["fence"]["unfenced"] is True


def test_status_of_a_folder_that_is_no_run_is_a_one_line_error(tmp_path, capsys):
    assert main(["status", str(tmp_path / "nothing")]) == 2
    assert "no run folder" in capsys.readouterr().err
