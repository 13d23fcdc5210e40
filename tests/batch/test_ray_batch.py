"""`tune-all --ray`: each operator's run is a Ray task asking for one GPU. A local Ray on the
CPU with a custom resource stands in for a cluster's GPUs (Ray is the optional
`kernel-controller[cluster]` dependency, which scripts/setup installs, so this never skips)."""

import json
import os
import signal
import threading
import time
from pathlib import Path

from batch_fixtures import write_script

from controller.batch.devices import read_holds
from controller.batch.record import RunOptions
from controller.batch.tune_all import run_batch, start_batch

EVENT_DEADLINE_S = 900.0
"""How long any one wait may last: each ends as soon as its event is seen (the agent sees its
go file, the worker its kill), so a loaded machine slows the test without failing it."""


def test_ray_runs_every_operator_as_a_task_one_fake_gpu_at_a_time(
    tmp_path, batch_target, device_locks
):
    script = write_script(tmp_path / "session.json", [])
    options = RunOptions(
        agent=f"scripted:{script}",
        device="cpu",
        target=str(batch_target),
        unfenced=True,
        max_attempts=1,
    )
    batch = start_batch(tmp_path / "runs", ["rms_norm", "gated_residual"], options, False)
    from controller.batch.ray_workers import RayWorkers

    workers = RayWorkers(
        batch,
        "local",
        gpu_resource="fake_gpu",
        init_options={"num_cpus": 2, "resources": {"fake_gpu": 1}, "include_dashboard": False},
    )
    lines: list[str] = []
    record, summary = run_batch(batch, workers, say=lines.append)
    assert record.state == "finished"
    assert {row.status for row in summary.operators} == {"rejected"}
    assert all(row.run_dir and row.device for row in summary.operators)
    assert sorted(line.split()[1] for line in lines) == ["gated_residual", "rms_norm"]
    holds = sorted(read_holds(batch), key=lambda hold: hold.acquired)
    assert len(holds) == 2 and all(hold.released for hold in holds)
    assert holds[0].released <= holds[1].acquired  # one fake GPU: Ray ran one task at a time


def test_a_killed_ray_worker_leaves_its_run_interrupted_and_resume_finishes_it(
    tmp_path, batch_target, device_locks
):
    go = tmp_path / "go"
    polls = int(EVENT_DEADLINE_S / 0.1)
    wait_for_go = f"for i in $(seq {polls}); do test -e {go} && exit 0; sleep 0.1; done; exit 1"
    script = write_script(tmp_path / "session.json", [{"tool": "bash", "command": wait_for_go}])
    options = RunOptions(
        agent=f"scripted:{script}",
        device="cpu",
        target=str(batch_target),
        unfenced=True,
        max_attempts=1,
    )
    batch = start_batch(tmp_path / "runs", ["rms_norm"], options, False)
    from controller.batch.ray_workers import RayWorkers

    def workers():
        return RayWorkers(
            batch,
            "local",
            gpu_resource="fake_gpu",
            init_options={"num_cpus": 2, "resources": {"fake_gpu": 1}, "include_dashboard": False},
        )

    failures: list[BaseException] = []

    def kill() -> None:
        try:
            _kill_worker_once_the_agent_works(batch)
        except BaseException as error:  # reported below; the agent is let go so the batch ends
            failures.append(error)
            go.touch()

    killer = threading.Thread(target=kill)
    killer.start()
    try:
        record, _ = run_batch(batch, workers())
        killer.join()
        assert not failures, failures
        assert record.state == "interrupted"
        entry = record.entries["rms_norm"]
        assert entry.status == "interrupted" and "WorkerCrashedError" in entry.reason
        run_dir = Path(entry.run_dir)
        _wait(lambda: _stopped(run_dir))

        go.touch()
        record, summary = run_batch(batch, workers())
        assert record.state == "finished" and summary.operators[0].status == "rejected"
        state = json.loads((run_dir / "state.json").read_text())
        assert state["reason"] == "attempt limit reached: 1 of 1 used"  # resumed, not restarted
    finally:
        go.touch()  # a killed worker's agent command may outlive it: let it end


def _stopped(run_dir: Path) -> bool:
    """The run's process is gone, having recorded itself `interrupted` (SIGTERM from its dead
    parent) or without a word: Ray's raylet may SIGKILL a dead worker's children first, which
    leaves the run mid-attempt, a crash that `--resume` continues all the same."""
    from controller.runs.store import RunStore

    state = json.loads((run_dir / "state.json").read_text())["state"]
    return state == "interrupted" or (
        state == "attempting" and RunStore(run_dir).lock_holder() is None
    )


def _kill_worker_once_the_agent_works(batch: Path) -> None:
    def worker_pid():
        holds = batch / "device-holds.jsonl"
        journals = list(batch.glob("runs/rms_norm/tune-*/journal.jsonl"))
        if not holds.is_file() or not journals or "attempting" not in journals[0].read_text():
            return None
        return json.loads(holds.read_text().splitlines()[0])["pid"]

    os.kill(_wait(worker_pid), signal.SIGKILL)


def _wait(probe, timeout: float = EVENT_DEADLINE_S):
    """Poll `probe` until it returns something true; only a machine stuck for `timeout`
    seconds fails the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g} s")
