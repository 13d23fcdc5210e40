"""Export a tune run's best solution: sources, solution JSON, the evaluations that promoted it
and a checksum of every file, staged in a partial folder and renamed into `export/`."""

import hashlib
import json
import os
import shutil
from pathlib import Path

from controller.flows.base import RunContext
from controller.flows.tune_incumbents import Incumbent
from controller.runs.store import write_json_atomic
from gates.tasks.solution import SOLUTION_FILE, load_solution

EXPORT = "export"
CHECKSUMS = "checksums.json"


def export_best(run: RunContext, operator: str, best: Incumbent) -> dict:
    """Write `export/` once (a complete one is reused) and say what it holds."""
    target = run.run_dir / EXPORT
    if not target.is_dir():
        staging = run.run_dir / f"{EXPORT}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(best.solution, staging / "solution")
        manifest = json.loads((staging / "solution" / SOLUTION_FILE).read_text())
        manifest["name"] = f"{operator}_tuned_{run.manifest.run_id}"
        manifest["description"] = (
            f"tuned by run {run.manifest.run_id} (attempt {best.attempt}) from the production "
            "kernel; every gate passed"
        )
        write_json_atomic(staging / "solution" / SOLUTION_FILE, manifest)
        load_solution(staging / "solution")  # the export must load as a solution
        write_json_atomic(
            staging / "evaluations" / f"attempt-{best.attempt:04d}.json", best.evaluation
        )
        write_json_atomic(
            staging / "export.json",
            {
                "operator": operator,
                "run_id": run.manifest.run_id,
                "attempt": best.attempt,
                "task_digest": run.manifest.work_item["task_digest"],
                "environment": run.manifest.environment,
                "weighted_speedup": best.reading.weighted_speedup() if best.reading else None,
            },
        )
        write_json_atomic(staging / CHECKSUMS, checksums(staging))
        os.replace(staging, target)
    return {
        "export": str(target),
        "attempt": best.attempt,
        "weighted_speedup": best.reading.weighted_speedup() if best.reading else None,
    }


def checksums(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder` (the checksum file itself excluded)."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != CHECKSUMS
    }
