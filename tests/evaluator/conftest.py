"""Shared evaluator test setup: task packages generated once per session, cheat solutions
packed from `cheats/`, and evaluations run a few at a time (each is two subprocesses)."""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

CHEATS = Path(__file__).resolve().parent / "cheats"
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


def cheat_solution(name: str, folder: Path) -> Path:
    """Pack cheats/<name>.py and the shared honest kernel into one solution JSON file."""
    sources = [
        {"path": "cheat.py", "content": (CHEATS / f"{name}.py").read_text()},
        {"path": "rms_kernel.py", "content": (CHEATS / "rms_kernel.py").read_text()},
    ]
    document = {
        "name": f"cheat_{name}",
        "definition": "rms_norm",
        "author": "tests",
        "spec": {
            "language": "triton",
            "target_hardware": ["cpu"],
            "entry_point": "cheat.py::rms_norm",
        },
        "sources": sources,
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(document))
    return path


def evaluate_many(jobs: dict[str, tuple[Path, Path]], device: str = "cpu") -> dict:
    """Evaluate {label: (task folder, solution)} a few at a time; returns {label: result}."""
    from gates.evaluator.evaluation import evaluate

    def one(item):
        label, (task, solution) = item
        return label, evaluate(task, solution, device=device, timeout=240)

    with ThreadPoolExecutor(PARALLEL_EVALUATIONS) as pool:
        return dict(pool.map(one, jobs.items()))
