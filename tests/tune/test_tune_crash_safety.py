"""SIGKILL a three-attempt tune run at every state transition, resume it, and compare.

Each kill runs in a forked child (the controller in this process's image, its journal told to
SIGKILL it right after the n-th event), so the sweep pays no interpreter start-up per point;
the resume then runs here through `controller tune run --resume`. Timing is faked at the
evaluator boundary, so every point costs about a second.
"""

import json
import os
import signal

import pytest
from tune_fixtures import FakeEvaluator, journal, mark, only_run, tune_arguments, write_script

from controller.cli.tune_command import run_tune
from controller.runs.journal import KILL_AT_VARIABLE


@pytest.fixture
def frozen_identity(monkeypatch):
    """Others may edit the source tree during the sweep; the runs freeze one digest for it."""
    monkeypatch.setattr("controller.runs.launch.controller_source_digest", lambda: "sha256:test")


def start(runs_dir, target, script, kill_at=None) -> int:
    """Run a new tune run in a forked child; its wait status."""
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 3
        try:
            if kill_at is not None:
                os.environ[KILL_AT_VARIABLE] = str(kill_at)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = run_tune(arguments(runs_dir, target, script), evaluator=FakeEvaluator())
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def arguments(runs_dir, target, script):
    return tune_arguments(
        runs_dir,
        target,
        operator="rms_norm",
        agent=f"scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=3,
    )


def outcome(run_dir) -> dict:
    """What must not depend on where the run was killed."""
    events = journal(run_dir)
    report = json.loads((run_dir / "evidence" / "report.json").read_text())
    checksums = json.loads((run_dir / "export" / "checksums.json").read_text())
    checksums.pop("solution/solution.json")  # names the run
    checksums.pop("export.json")
    checksums.pop("evaluations/attempt-0003.json")  # names the run's paths
    return {
        "state": report["state"],
        "reason": report["reason"],
        "started": [e["attempt"] for e in events if e["kind"] == "agent_started"],
        "attempts": [(a["number"], a["status"]) for a in report["attempts"]],
        "verdicts": [[(v["gate"], v["passed"]) for v in a["verdicts"]] for a in report["attempts"]],
        "incumbents": sorted(p.name for p in (run_dir / "incumbents").iterdir()),
        "export": checksums,
        "sequence": [e["seq"] for e in events] == list(range(1, len(events) + 1)),
    }


@pytest.mark.slow
def test_killed_at_every_transition_resumes_to_the_same_incumbent(
    tune_target, tmp_path, frozen_identity
):
    script = write_script(
        tmp_path / "session.json",
        [mark("incorrect")],
        [mark("factor=1.10")],
        [mark("factor=0.85")],
    )
    assert start(tmp_path / "clean", tune_target, script) == 0
    clean_dir = only_run(tmp_path / "clean")
    clean = outcome(clean_dir)
    assert clean["started"] == [1, 2, 3] and clean["incumbents"] == ["0000", "0003"]
    assert clean["state"] == "done" and clean["sequence"]
    points = [e["seq"] for e in journal(clean_dir) if e["kind"] == "transition"]
    assert len(points) == 13
    for kill_at in points:
        runs_dir = tmp_path / f"kill-{kill_at:02d}"
        status = start(runs_dir, tune_target, script, kill_at=kill_at)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, kill_at
        run_dir = only_run(runs_dir)
        assert len(journal(run_dir)) == kill_at
        code = run_tune(tune_arguments(runs_dir, resume=run_dir), evaluator=FakeEvaluator())
        assert code == 0, kill_at
        assert outcome(run_dir) == clean, kill_at
