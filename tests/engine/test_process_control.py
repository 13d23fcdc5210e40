"""Signals and the run lock, with the engine in its own process: SIGINT/SIGTERM leave the run
interrupted (exit 130) and resumable; a second process on a live run is refused; an edited
controller source is refused on resume."""

import json
import signal
import time

import pytest
from engine_fixtures import make_target
from engine_processes import frozen_source, harness, harness_process, only_run

from controller.cli import main
from controller.cli.runs_command import run_status
from controller.runs.store import RunStore


@pytest.fixture
def source(tmp_path):
    return frozen_source(tmp_path / "source")


def wait_for_agent(runs_dir, process, limit_s=60.0):
    """Poll until the background run's first agent session has started; its run folder."""
    deadline = time.monotonic() + limit_s
    while True:
        markers = list(runs_dir.glob("*/attempts/0001/agent-started"))
        if markers:
            return markers[0].parents[2]
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.05)


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_interrupts_a_live_run_that_a_second_process_cannot_touch(
    tmp_path, source, stop_signal, capsys
):
    target = make_target(tmp_path / "target")
    runs_dir = tmp_path / "runs"
    live = harness_process("start", runs_dir, target, "--sleep", "60", python_path=source)
    try:
        run_dir = wait_for_agent(runs_dir, live)
        status = run_status(RunStore.open(run_dir))
        assert (status["state"], status["live_pid"]) == ("attempting", str(live.pid))
        second = harness("resume", run_dir, python_path=source)
        assert second.returncode == 2 and "in use by another process" in second.stderr
        live.send_signal(stop_signal)
        live.communicate(timeout=60)
    finally:
        if live.poll() is None:
            live.kill()
    assert live.returncode == 130
    state = json.loads((run_dir / "state.json").read_text())
    assert (state["state"], state["resume_state"]) == ("interrupted", "attempting")
    assert f"stopped by {stop_signal.name}" in state["reason"]
    report = json.loads((run_dir / "evidence" / "report.json").read_text())
    assert [a["status"] for a in report["attempts"]] == ["interrupted"]
    assert main(["status", str(run_dir)]) == 0
    assert "resume it with the code that started it" in capsys.readouterr().out
    resumed = harness("resume", run_dir, python_path=source)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads((run_dir / "evidence" / "report.json").read_text())
    assert [a["status"] for a in report["attempts"]] == ["interrupted", "accepted"]


def test_an_edited_controller_source_is_refused_on_resume(tmp_path, source):
    target = make_target(tmp_path / "target")
    runs_dir = tmp_path / "runs"
    assert harness("start", runs_dir, target, kill_at=4, python_path=source).returncode < 0
    run_dir = only_run(runs_dir)
    errors_module = source / "controller" / "errors.py"
    errors_module.write_text(errors_module.read_text() + "\n# edited\n")
    refused = harness("resume", run_dir, python_path=source)
    assert refused.returncode == 2
    assert "'controller_source_digest'" in refused.stderr


def test_a_changed_environment_is_refused_on_resume(tmp_path, source):
    target = make_target(tmp_path / "target")
    runs_dir = tmp_path / "runs"
    assert harness("start", runs_dir, target, kill_at=4, python_path=source).returncode < 0
    changed = {"python": "3.test", "torch": "other", "triton": "test", "gpu_name": "cpu"}
    refused = harness("resume", only_run(runs_dir), python_path=source, environment=changed)
    assert refused.returncode == 2 and "'environment.torch'" in refused.stderr
