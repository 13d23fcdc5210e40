"""Exports made by the tune flow's own exporter from a generated task package, as a finished
tune run leaves them (a CPU cannot promote, so no real run here produces one)."""

import shutil
from pathlib import Path
from types import SimpleNamespace

from controller.flows.tune_export import export_best
from controller.flows.tune_incumbents import Incumbent
from gates.tasks.generation import write_package
from operators import REGISTRY
from operators.environment import current_environment_identity


def make_export(folder: Path, operator: str = "rms_norm", **environment: str) -> Path:
    """`folder/run/export/` for `operator`'s production kernel, verified on the CPU here."""
    task, digest = write_package(REGISTRY.declaration(operator), folder / "tasks")
    run_dir = folder / "run"
    run_dir.mkdir(parents=True)
    identity = current_environment_identity().model_dump() | environment
    run = SimpleNamespace(
        run_dir=run_dir,
        manifest=SimpleNamespace(
            run_id="tune-20261201T000000Z-abcdef",
            work_item={"task_digest": digest},
            environment=identity,
        ),
    )
    incumbent_folder = folder / "incumbent"
    shutil.copytree(task / "solution", incumbent_folder / "solution")
    evaluation = {"device": "cpu", "status": "PASSED", "operator": operator}
    export_best(run, operator, Incumbent(attempt=3, folder=incumbent_folder, evaluation=evaluation))
    return run_dir / "export"
