"""Fixtures for the gate tests: the fixture target's BASE tree and fresh candidates of it."""

import itertools
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from target_fixture import GOOD_EDITS, apply_edits, seeded_runner, write_target


@pytest.fixture(scope="session")
def base_tree(tmp_path_factory) -> Path:
    return write_target(tmp_path_factory.mktemp("fixture") / "base")


@pytest.fixture(scope="session")
def base_probe_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("base-probe")


@pytest.fixture
def make_candidate(base_tree, tmp_path) -> Callable[..., Path]:
    """A fresh candidate tree: BASE (without .git) plus the good edits, then `edits`."""

    def make(edits: dict[str, str | None] | None = None, good: bool = True) -> Path:
        tree = tmp_path / "candidate"
        shutil.copytree(base_tree, tree, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        apply_edits(tree, {**(GOOD_EDITS if good else {}), **(edits or {})})
        return tree

    return make


@pytest.fixture
def commit_of(base_tree, tmp_path):
    """The judged commit of a candidate tree on the fixture's BASE (built as for an attempt)."""
    from gates.registration.judged_commit import commit_workspace

    built = itertools.count()

    def build(tree: Path):
        return commit_workspace(base_tree, tree, tmp_path / f"commit-{next(built)}.git")

    return build


@pytest.fixture(scope="session")
def runner(tmp_path_factory):
    """The Landlock fence where this machine can enforce it (as the gates run by default)."""
    return seeded_runner(tmp_path_factory.mktemp("pycache"))


@pytest.fixture
def probe(runner, tmp_path):
    """Run the parity probe on a tree (the candidate's, fresh each time)."""
    from target_fixture import REQUEST

    from gates.registration.probes import run_probe
    from gates.target import load_target_config

    def run(tree: Path):
        config = load_target_config(tree)
        return run_probe(tree, tmp_path / "probe", config, REQUEST.operator, runner)

    return run


@pytest.fixture
def base_probe(base_tree, base_probe_dir, runner):
    """BASE's probe, run once per session and read back afterwards."""
    from target_fixture import REQUEST

    from gates.registration.probes import cached_probe
    from gates.target import load_target_config

    config = load_target_config(base_tree)
    return cached_probe(base_tree, base_probe_dir, config, REQUEST.operator, runner)
