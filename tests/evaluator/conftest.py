"""Shared evaluator test setup: task packages generated once per session, cheat solutions
packed from `cheats/`, and evaluations run a few at a time (each is two subprocesses)."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

PARALLEL_EVALUATIONS = 3


@pytest.fixture(scope="session")
def task_root(tmp_path_factory) -> Path:
    """Every catalog operator's task package, generated once."""
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    root = tmp_path_factory.mktemp("tasks")
    for declaration in REGISTRY:
        write_package(declaration, root)
    return root


def evaluate_many(jobs: dict[str, tuple[Path, Path]], device: str = "cpu") -> dict:
    """Evaluate {label: (task folder, solution)} a few at a time; returns {label: result}."""
    from gates.evaluator.evaluation import evaluate

    def one(item):
        label, (task, solution) = item
        return label, evaluate(task, solution, device=device, timeout=240)

    with ThreadPoolExecutor(PARALLEL_EVALUATIONS) as pool:
        return dict(pool.map(one, jobs.items()))
