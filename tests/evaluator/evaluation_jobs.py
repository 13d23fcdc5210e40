"""Evaluate several task/solution pairs a few at a time, for the evaluator tests."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PARALLEL_EVALUATIONS = 3


def evaluate_many(jobs: dict[str, tuple[Path, Path]], device: str = "cpu") -> dict:
    """Evaluate {label: (task folder, solution)} a few at a time; returns {label: result}."""
    from gates.evaluator.evaluation import evaluate

    def one(item):
        label, (task, solution) = item
        return label, evaluate(task, solution, device=device, timeout=240)

    with ThreadPoolExecutor(PARALLEL_EVALUATIONS) as pool:
        return dict(pool.map(one, jobs.items()))
