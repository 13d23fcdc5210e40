"""`controller tune-all`: preflights, one `tune run` child per operator, Ctrl-C and resume,
the summary, and device holds that never overlap on one GPU.

The runs are real `tune run` processes on the CPU with a scripted agent, so no attempt is
timed; only the preflight's evaluator is replaced (the real one takes a minute per operator
under the Triton interpreter).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batch_fixtures import write_script

from controller.batch.devices import DeviceLock, overlapping_holds, read_holds
from controller.batch.evaluation_windows import evaluation_windows, overlapping_windows
from controller.batch.summary import BatchSummary, device_check
from controller.cli import build_parser, main
from controller.cli.tune_all_command import run as run_tune_all
from gates.evaluator.protocol import EvaluationResult
from gates.evaluator.results import TimingReport, WorkloadTiming

ROOT = Path(__file__).resolve().parents[2]


def preflight_evaluator(task, solution, device="cpu", judged_as="candidate"):
    """rms_norm's baseline passes (timed); gated_residual's breaks its contract."""
    assert judged_as == "baseline"  # preflight never judges a baseline by candidate rules
    name = Path(task).name
    common = {"task": str(task), "operator": name, "solution": f"{name}_baseline"}
    if name == "gated_residual":
        return EvaluationResult(
            **common, device=device, status="INCORRECT_NUMERICAL", reason="y: 3 elements off"
        )
    rows = {"action_b1": (3.0, 4.0), "prefix_b1": (1.0, 8.0)}
    timing = TimingReport(
        workloads={
            name: WorkloadTiming(weight=weight, baseline_median_us=us, candidate_median_us=us)
            for name, (weight, us) in rows.items()
        }
    )
    return EvaluationResult(**common, device=device, status="PASSED", timing=timing)


def tune_all_argv(runs: Path, target: Path, script: Path, *extra: str) -> list[str]:
    return [
        "tune-all",
        *extra,
        "--device",
        "cpu",
        "--agent",
        f"scripted:{script}",
        "--unfenced",
        "--max-attempts",
        "1",
        "--target",
        str(target),
        "--runs-dir",
        str(runs),
    ]


def only_batch(runs: Path) -> Path:
    (folder,) = [path for path in runs.iterdir() if path.name.startswith("batch-")]
    return folder


def test_a_failed_preflight_marks_only_its_operator_and_the_summary_says_so(
    tmp_path, batch_target, device_locks, capsys
):
    script = write_script(tmp_path / "session.json", [])
    argv = tune_all_argv(tmp_path / "runs", batch_target, script, "gated_residual", "rms_norm")
    code = run_tune_all(build_parser().parse_args(argv), evaluator=preflight_evaluator)
    assert code == 1  # not every operator ended done
    printed = capsys.readouterr().out
    assert (
        "preflight gated_residual: INCORRECT_NUMERICAL (y: 3 elements off); not tuned (the "
        "production kernel fails its own task; --no-preflight tunes it anyway" in printed
    )
    assert "preflight rms_norm: baseline PASSED, 5.00 us weighted" in printed
    assert (
        "[2/2] rms_norm rejected: attempt limit reached: 1 of 1 used" in printed
    )  # no GPU named on a CPU

    batch = only_batch(tmp_path / "runs")
    record = json.loads((batch / "batch.json").read_text())
    assert record["state"] == "finished"
    assert record["entries"]["gated_residual"]["status"] == "preflight_failed"
    assert not (batch / "runs" / "gated_residual").exists()  # never run
    assert (batch / "tasks" / "gated_residual" / "identity.json").is_file()
    summary = json.loads((batch / "summary.json").read_text())
    rows = {row["operator"]: row for row in summary["operators"]}
    assert rows["gated_residual"]["stop_reason"] == (
        "preflight INCORRECT_NUMERICAL: y: 3 elements off (the production kernel fails its own "
        "task; --no-preflight tunes it anyway, every candidate still held to the contract)"
    )
    assert rows["rms_norm"]["status"] == "rejected"
    assert rows["rms_norm"]["baseline_us"] == 5.0
    assert rows["rms_norm"]["export"] is None  # nothing can be promoted without CUDA timing
    assert summary["overlapping_device_holds"] == 0 and summary["device_holds"] == 1
    (window,) = summary["evaluations"]  # attempt 1's gates, inside rms_norm's hold of GPU 0
    assert (window["operator"], window["attempt"], window["gpu"]) == ("rms_norm", 1, "0")
    assert summary["overlapping_evaluations"] == 0 == summary["evaluations_outside_holds"]
    markdown = (batch / "summary.md").read_text()
    assert "| rms_norm | rejected | 5.00 | - | - | - | attempt limit reached" in markdown


def test_resume_refuses_another_selection_or_agent(tmp_path, batch_target, capsys):
    from controller.batch.record import RunOptions
    from controller.batch.tune_all import start_batch

    options = RunOptions(agent="autotune", device="cpu", target=str(batch_target))
    batch = start_batch(tmp_path, ["rms_norm", "rotate_qk"], options)
    assert main(["tune-all", "--resume", str(batch), "--agent", "claude"]) == 2
    assert "batch field 'options.agent' is 'autotune', not 'claude'" in capsys.readouterr().err
    assert main(["tune-all", "rms_norm", "--resume", str(batch)]) == 2
    assert "batch field 'operators' is ['rms_norm', 'rotate_qk']" in capsys.readouterr().err
    assert main(["tune-all", "nonexistent_op", "--runs-dir", str(tmp_path)]) == 2
    assert "unknown operator 'nonexistent_op'" in capsys.readouterr().err
    fresh = tmp_path / "fresh"
    argv = ["tune-all", "rms_norm", "--max-attempts", "0", "--target", str(batch_target)]
    assert main([*argv, "--runs-dir", str(fresh)]) == 2
    assert "max_attempts: input should be greater than or equal to 1" in capsys.readouterr().err
    assert not fresh.exists()


@pytest.mark.slow
def test_ctrl_c_stops_the_batch_resumably_and_no_gpu_is_held_twice(
    tmp_path, batch_target, device_locks
):
    """GPU 0 is held by this test, so the batch runs on GPU 1 alone until it is freed."""
    go = tmp_path / "go"
    wait_for_go = f"for i in $(seq 1200); do test -e {go} && exit 0; sleep 0.1; done"
    script = write_script(tmp_path / "session.json", [{"tool": "bash", "command": wait_for_go}])
    runs = tmp_path / "runs"
    argv = tune_all_argv(runs, batch_target, script, "rms_norm", "rotate_qk")
    argv += ["--gpus", "0,1", "--no-preflight"]
    held_by_test = DeviceLock("0")
    assert held_by_test.acquire(blocking=False)
    batch_process = subprocess.Popen(
        [sys.executable, "-m", "controller", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        batch = _wait_for(lambda: _agent_working(runs), "a run's agent to start", batch_process)
        os.kill(batch_process.pid, signal.SIGINT)
        output, _ = batch_process.communicate(timeout=120)
    finally:
        if batch_process.poll() is None:
            batch_process.kill()
    assert batch_process.returncode == 130, output
    assert f"resume with --resume {batch}" in output
    record = json.loads((batch / "batch.json").read_text())
    assert record["state"] == "interrupted"
    statuses = sorted(entry["status"] for entry in record["entries"].values())
    assert statuses == ["interrupted", "pending"], output
    assert {hold.gpu for hold in read_holds(batch)} == {"1"}  # GPU 0 was never taken

    held_by_test.release()
    go.touch()
    resumed = subprocess.run(
        [sys.executable, "-m", "controller", "tune-all", "--resume", str(batch), "--gpus", "0,1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr  # rejected: nothing timed
    record = json.loads((batch / "batch.json").read_text())
    assert record["state"] == "finished"
    entries = record["entries"].values()
    assert {entry["status"] for entry in entries} == {"rejected"}, [e["reason"] for e in entries]
    interrupted_run = Path(record["entries"][_first_started(batch)]["run_dir"])
    state = json.loads((interrupted_run / "state.json").read_text())
    assert state["reason"] == "attempt limit reached: 1 of 1 used"  # resumed, not restarted
    holds = read_holds(batch)
    assert len(holds) == 3 and all(hold.released is not None for hold in holds)
    assert overlapping_holds(holds) == []
    assert "no two held one GPU at once" in (batch / "summary.md").read_text()
    summary = json.loads((batch / "summary.json").read_text())
    assert summary["evaluations"] and all(w["gpu"] for w in summary["evaluations"])
    assert summary["overlapping_evaluations"] == 0


def _agent_working(runs: Path) -> Path | None:
    batches = list(runs.glob("batch-*")) if runs.is_dir() else []
    for batch in batches:
        for journal in batch.glob("runs/*/tune-*/journal.jsonl"):
            if "attempting" in journal.read_text():
                return batch
    return None


def _first_started(batch: Path) -> str:
    first = (batch / "device-holds.jsonl").read_text().splitlines()[0]
    return json.loads(first)["operator"]


def _wait_for(probe, what: str, process: subprocess.Popen, timeout: float = 180.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        if process.poll() is not None:
            raise AssertionError(f"exited {process.returncode}: {process.stdout.read()}")
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_summary_flags_two_evaluations_on_one_gpu_at_once(tmp_path):
    """Holds and journals as a broken scheduler would leave them: both runs on GPU 0."""
    holds = [("acquired", "a", 10.0), ("acquired", "b", 11.0), ("released", "a", 20.0)]
    holds.append(("released", "b", 21.0))
    (tmp_path / "device-holds.jsonl").write_text(
        "".join(
            json.dumps({"event": event, "gpu": "0", "operator": name, "time": at}) + "\n"
            for event, name, at in holds
        )
    )
    for name, start in (("a", 12.0), ("b", 13.0)):
        run = tmp_path / "runs" / name / "tune-1"
        run.mkdir(parents=True)
        transitions = [("attempting", "checking", start), ("checking", "feedback", start + 5)]
        run.joinpath("journal.jsonl").write_text(
            "".join(
                json.dumps({"kind": "transition", "from": a, "to": b, "at": at, "attempt": 1})
                + "\n"
                for a, b, at in transitions
            )
        )
    windows = evaluation_windows(tmp_path)
    assert [(w.operator, w.gpu) for w in windows] == [("a", "0"), ("b", "0")]
    assert len(overlapping_windows(windows)) == 1
    summary = BatchSummary(
        batch_id="b",
        state="finished",
        operators=[],
        device_holds=2,
        overlapping_device_holds=1,
        evaluations=windows,
        overlapping_evaluations=1,
    )
    assert "1 pairs of evaluations overlapped" in device_check(summary)
    assert "not trustworthy" in device_check(summary)


def test_an_operators_run_gets_its_minutes_less_its_preflight_and_expects_as_long_an_attempt(
    tmp_path,
):
    """The plan's minutes hold for the operator's whole tuning, preflight included."""
    from controller.batch.record import Preflight, RunOptions, new_record, save
    from controller.batch.runs import tune_command

    options = RunOptions(agent="autotune", device="cpu", target=str(tmp_path), max_minutes=2.0)
    record = new_record(["rms_norm", "gated_residual"], options, True)
    timed = Preflight(passed=True, status="PASSED", seconds=30.0)
    entries = {**record.entries}
    entries["rms_norm"] = entries["rms_norm"].model_copy(update={"preflight": timed})
    save(tmp_path, record.model_copy(update={"entries": entries}))
    command = tune_command(tmp_path, "rms_norm", options)
    assert command[command.index("--max-minutes") + 1] == "1.5"
    assert command[command.index("--expected-attempt-seconds") + 1] == "30.0"
    untimed = tune_command(tmp_path, "gated_residual", options)  # no preflight ran
    assert untimed[untimed.index("--max-minutes") + 1] == "2.0"
    assert "--expected-attempt-seconds" not in untimed
