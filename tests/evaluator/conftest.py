"""Shared evaluator test setup: task packages generated once per session, cheat solutions
packed from `cheats/` (evaluations run a few at a time: see evaluation_jobs.py)."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def task_root(tmp_path_factory) -> Path:
    """Every catalog operator's task package, generated once."""
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    root = tmp_path_factory.mktemp("tasks")
    for declaration in REGISTRY:
        write_package(declaration, root)
    return root


@pytest.fixture(params=["zygote", "spawn"])
def start_method(request, monkeypatch) -> str:
    """Run the test with workers forked from the zygote, then as fresh processes."""
    monkeypatch.setenv("CONTROLLER_WORKER_START", request.param)
    return request.param
