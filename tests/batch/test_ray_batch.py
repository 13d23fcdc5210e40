"""`tune-all --ray`: each operator's run is a Ray task asking for one GPU. A local Ray on the
CPU with a custom resource stands in for a cluster's GPUs (skipped where Ray is not installed:
it is the optional `kernel-controller[cluster]` dependency)."""

import pytest
from batch_fixtures import write_script

from controller.batch.devices import read_holds
from controller.batch.record import RunOptions
from controller.batch.tune_all import run_batch, start_batch

ray = pytest.importorskip("ray")


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
