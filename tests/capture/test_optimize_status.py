"""`controller status` on real optimize batches (the machine faked at its boundary): a finished
batch, one SIGKILLed inside a tune step, one stopped by a signal, and one a process holds."""

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from optimize_runs import forked, journal_events, light_fake_steps, only_batch, optimize_argv

from controller.cli import build_parser, main
from controller.cli.optimize_command import run as run_optimize
from controller.optimize.steps import OptimizeInterrupted
from controller.runs.store import RunStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "batch"))
from batch_fixtures import make_target  # noqa: E402

KILLED_AS_RMS_NORM_STARTS = 12  # created, 4 steps started and finished, tune gated_residual_norm


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    return make_target(tmp_path_factory.mktemp("target") / "repo")


def status_of(batch: Path, capsys, *extra: str) -> str:
    capsys.readouterr()
    assert main(["status", str(batch), *extra]) == 0
    return capsys.readouterr().out


def test_a_finished_batch_shows_its_last_step_its_tunings_the_kept_kernels_and_the_profile(
    tiny_capture, target, tmp_path, capsys
):
    argv = optimize_argv(tmp_path, target)
    assert run_optimize(build_parser().parse_args(argv), steps=light_fake_steps(tiny_capture)) == 0
    batch = only_batch(tmp_path / "runs")
    lines = status_of(batch, capsys).splitlines()
    assert lines[0] == f"run {batch.name}  flow optimize  state finished"
    assert lines[1:5] == [
        "step: publish (finished)",
        "tuned: gated_residual_norm done x1.200, rms_norm done x1.200, rotate_qk rejected, "
        "ada_rms_norm rejected",
        "kernels: installed gated_residual_norm, rms_norm; kept gated_residual_norm; "
        "dropped rms_norm",
        f"profile: gated_residual_norm published into {tmp_path.resolve() / 'tuned' / 'fast'}",
    ]
    assert lines[5].endswith(" s active; no process attached")
    assert len(lines) == 6  # a finished batch has nothing to resume

    status = json.loads(status_of(batch, capsys, "--json"))
    assert (status["state"], status["step"], status["live_pid"]) == ("finished", "publish", None)
    assert status["outcome"]["published"] == ["gated_residual_norm"]
    decisions = {row["operator"]: row["kept"] for row in status["outcome"]["decisions"]}
    assert decisions == {"gated_residual_norm": True, "rms_norm": False}


def test_a_batch_killed_inside_a_step_is_interrupted_there_and_says_how_to_resume(
    tiny_capture, target, tmp_path, capsys
):
    argv = optimize_argv(tmp_path, target)
    code = forked(argv, light_fake_steps(tiny_capture), KILLED_AS_RMS_NORM_STARTS)
    assert os.WIFSIGNALED(code) and os.WTERMSIG(code) == signal.SIGKILL
    batch = only_batch(tmp_path / "runs")
    last = journal_events(batch)[-1]
    assert (last["kind"], last["step"]) == ("step_started", "tune rms_norm")
    lines = status_of(batch, capsys).splitlines()
    assert lines[0] == (
        f"run {batch.name}  flow optimize  state interrupted (its process was killed or crashed)"
    )
    assert lines[1:4] == [
        "step: tune rms_norm (started, not finished)",
        "tuned: gated_residual_norm done x1.200, not yet rms_norm, rotate_qk, ada_rms_norm",
        "profile: not published yet",
    ]
    assert lines[4].endswith(" s active; no process attached")
    assert lines[5] == f"resume with: controller optimize --resume {batch}"

    with RunStore(batch).locked():  # a process working on it: running, not interrupted
        held = status_of(batch, capsys).splitlines()
    assert held[0] == f"run {batch.name}  flow optimize  state running"
    assert held[-1].endswith(f"; live (pid {os.getpid()})")

    resumed = build_parser().parse_args(["optimize", "--resume", str(batch)])
    assert run_optimize(resumed, steps=light_fake_steps(tiny_capture)) == 0
    assert status_of(batch, capsys).splitlines()[1] == "step: publish (finished)"


def test_a_batch_stopped_by_a_signal_shows_why(tiny_capture, target, tmp_path, capsys):
    steps = light_fake_steps(tiny_capture)

    def stopped(operator, minutes, capture, folder):
        raise OptimizeInterrupted("stopped by SIGTERM")

    steps.tune = stopped
    argv = optimize_argv(tmp_path, target)
    assert run_optimize(build_parser().parse_args(argv), steps=steps) == 130
    batch = only_batch(tmp_path / "runs")
    lines = status_of(batch, capsys).splitlines()
    assert lines[0] == f"run {batch.name}  flow optimize  state interrupted (stopped by SIGTERM)"
    assert lines[1] == "step: tune gated_residual_norm (started, not finished)"
    assert lines[2] == ("tuned: not yet gated_residual_norm, rms_norm, rotate_qk, ada_rms_norm")


def test_a_folder_that_is_not_a_run_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["status", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"controller: error: no run folder {tmp_path}")
    assert error.count("\n") == 1
