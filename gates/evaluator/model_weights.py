"""How often the model calls each workload of a task, read in the controller's process (never
from the candidate's report): promotion weighs each workload by these calls x its time, so the
weighted figure is the change in the model's time.

A captured task counts the model's own calls (each layout's count over the capture's steps);
a task made from the catalog takes the declaration's calls per forward, or its relative weight
where none is declared.
"""

import json
from pathlib import Path

from gates.evaluator.captured_cases import load_captured
from gates.evaluator.results import WorkloadWeight
from gates.tasks.captured import LAYOUTS_FILE


def model_weights(task_folder: Path, declaration) -> dict[str, WorkloadWeight]:
    """Calls per forward of each timed workload (named as timing rows are), with its source."""
    folder = Path(task_folder)
    captured = load_captured(folder)
    if captured:
        steps = json.loads((folder / LAYOUTS_FILE).read_text()).get("steps") or 1
        return {
            item.uuid.removeprefix(f"{declaration.name}-"): WorkloadWeight(
                calls_per_forward=item.count / steps, source="captured"
            )
            for item in captured
        }
    return {
        workload.name: (
            WorkloadWeight(calls_per_forward=workload.calls_per_forward, source="declared")
            if workload.calls_per_forward is not None
            else WorkloadWeight(calls_per_forward=workload.weight, source="declared-weight")
        )
        for workload in declaration.workloads
    }
