"""The tune flow with its real fence and its real evaluator on the CPU.

Under Landlock the workspace's task package and history are read-only and the controller's
own copy is out of reach; on the CPU the real evaluator checks correctness under the Triton
interpreter and the run says plainly that nothing can be promoted without CUDA timing.
"""

import json
import sys
from pathlib import Path

import pytest
from tune_fixtures import FakeEvaluator, mark, only_run, tune_arguments, write_script

from controller.cli.tune_command import run_tune
from controller.flows.tune import task_package_digest
from controller.runs.store import RunStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import readme_claims  # noqa: E402


def _landlock_or_skip():
    from sandbox.errors import FenceError
    from sandbox.fence import get_fence

    try:
        get_fence("landlock")
    except FenceError as error:
        pytest.skip(f"Landlock is not enforceable here: {error}")


def test_under_landlock_the_task_history_and_controller_copy_are_read_only(tune_target, tmp_path):
    _landlock_or_skip()
    script = write_script(
        tmp_path / "session.json",
        [
            {"tool": "write", "path": "task/contract.json", "content": "{}"},
            {"tool": "write", "path": "history/attempts.json", "content": "[]"},
            {"tool": "write", "path": "../../../prepared/task/contract.json", "content": "{}"},
            mark("factor=0.5"),
        ],
    )
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="rms_norm",
        agent=f"scripted:{script}",
        fence="landlock",
        device="cpu",
        max_attempts=1,
    )
    assert run_tune(arguments, evaluator=FakeEvaluator()) == 1
    run_dir = only_run(tmp_path / "runs")
    transcript = json.loads((run_dir / "attempts" / "0001" / "transcript.json").read_text())
    outcomes = [entry["ok"] for entry in transcript if entry.get("role") == "tool"]
    assert outcomes == [False, False, False, True]
    verdicts = json.loads((run_dir / "attempts" / "0001" / "check.json").read_text())["gates"]
    assert verdicts == ["scope", "ruff", "correctness", "latency"]
    digest = RunStore(run_dir).manifest().work_item["task_digest"]
    assert task_package_digest(run_dir / "prepared" / "task") == digest


@pytest.mark.slow
def test_the_readmes_cpu_tune_run_ends_as_the_readme_says(tmp_path, capsys):
    """The README's `tune run` exactly (autotune, the real evaluator, the Triton interpreter):
    correctness is checked, the latency gate says nothing is promoted without CUDA timing, the
    run ends `rejected` with exit 1, and the console names the report and its HTML page."""
    from controller.cli import main

    readme = readme_claims.readme()
    assert "ends\n`rejected` (exit 1)" in readme or "ends `rejected` (exit 1)" in readme
    code = main([*readme_claims.command("tune run"), "--runs-dir", str(tmp_path / "runs")])
    assert code == 1
    run_dir = only_run(tmp_path / "runs")
    assert json.loads((run_dir / "state.json").read_text())["state"] == "rejected"
    verdicts = run_dir / "attempts" / "0002" / "verdicts"
    correctness = json.loads((verdicts / "correctness.json").read_text())
    assert correctness["passed"], correctness["summary"]
    latency = json.loads((verdicts / "latency.json").read_text())
    assert not latency["passed"]
    assert "nothing can be promoted without CUDA timing" in latency["summary"]
    report = (run_dir / "evidence" / "report.md").read_text()
    assert "nothing could be promoted (promotion needs CUDA timing)" in report
    assert "(report.html)" in report and not (run_dir / "export").exists()
    printed = capsys.readouterr().err
    assert "evidence/report.md" in printed and "evidence/report.html" in printed
