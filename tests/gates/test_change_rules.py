"""One set of change rules for every flow: the tune flow's scope and ruff gates refuse what
registration's refuse (an oversized source, too many files, binaries, file-level and bare
`noqa`), through the same implementation (`gates/changes/`)."""

import shutil
from pathlib import Path

import pytest

from gates.changes.limits import ChangeLimits
from gates.tasks.package import digest_files, read_package_files
from gates.tuning import scope
from gates.tuning.suite import TuningCheck, check_tuning_attempt

KERNEL = '''\
"""A solution's kernel."""


def scale(x):
    return x * 2
'''
PYPROJECT = '[tool.ruff]\nline-length = 100\n\n[tool.ruff.lint]\nselect = ["E", "F", "W", "I"]\n'


class NeverEvaluates:
    """The evaluator the cheap gates must never reach for a refused candidate."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        raise AssertionError("a refused candidate reached the evaluator")


@pytest.fixture
def tune_trees(tmp_path):
    """BASE (its ruff configuration), the attempt's start tree and a fresh candidate copy."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "pyproject.toml").write_text(PYPROJECT)
    start = tmp_path / "start"
    (start / "task").mkdir(parents=True)
    (start / "task" / "definition.json").write_text("{}\n")
    (start / "solution").mkdir()
    (start / "solution" / "kernel.py").write_text(KERNEL)
    candidate = tmp_path / "candidate"
    shutil.copytree(start, candidate)
    return base, start, candidate


def judge(tmp_path: Path, base: Path, start: Path, candidate: Path, **limits):
    evaluator = NeverEvaluates()
    check = TuningCheck(
        start=start,
        candidate=candidate,
        task=start / "task",
        task_digest=digest_files(read_package_files(start / "task")),
        base=base,
        limits=ChangeLimits(**limits),
        work=tmp_path / "work",
    )
    outcome = check_tuning_attempt(check, evaluator)
    assert evaluator.calls == 0
    return {verdict.gate: verdict for verdict in outcome.verdicts}


def test_a_43_mb_source_is_refused_by_the_tune_flows_scope(tmp_path, tune_trees):
    base, start, candidate = tune_trees
    padding = "# " + "x" * 98 + "\n"
    (candidate / "solution" / "kernel.py").write_text(KERNEL + padding * 430_000)
    verdicts = judge(tmp_path, base, start, candidate)
    assert not verdicts["scope"].passed
    problems = verdicts["scope"].details["problems"]
    assert any(
        p.startswith("solution/kernel.py: 43,") and "over the per-file limit of 1,000,000" in p
        for p in problems
    ), problems
    assert not verdicts["ruff"].passed  # refused unread, not linted for minutes
    assert "not linted, over the per-file limit" in verdicts["ruff"].summary


def test_too_many_sources_and_a_binary_are_refused_by_the_tune_flows_scope(tmp_path, tune_trees):
    base, start, candidate = tune_trees
    for number in range(4):
        (candidate / "solution" / f"part_{number}.py").write_text(f"VALUE = {number}\n")
    (candidate / "solution" / "packed.py").write_bytes(b"\x00\x01\x02")
    verdicts = judge(tmp_path, base, start, candidate, max_changed_files=3)
    assert verdicts["scope"].summary.startswith("5 changed paths, over the limit of 3")
    problems = verdicts["scope"].details["problems"]
    assert "solution/packed.py: binary files are not allowed" in problems


@pytest.mark.parametrize(
    ("comment", "kind"),
    [("# ruff: noqa", "file-level suppression"), ("# noqa", "bare suppression")],
)
def test_a_suppression_that_switches_ruff_off_is_refused_by_the_tune_flows_ruff(
    tmp_path, tune_trees, comment, kind
):
    base, start, candidate = tune_trees
    source = (
        f"{comment}\n" + KERNEL if kind.startswith("file") else KERNEL + f"\nx = 1  {comment}\n"
    )
    (candidate / "solution" / "kernel.py").write_text(source)
    verdicts = judge(tmp_path, base, start, candidate)
    assert verdicts["scope"].passed, verdicts["scope"].summary
    assert not verdicts["ruff"].passed
    assert "solution/kernel.py:" in verdicts["ruff"].summary
    assert f"{kind} `{comment}` switches ruff off" in verdicts["ruff"].summary


def test_the_tune_flows_ruff_applies_bases_configuration(tmp_path, tune_trees):
    """An unused import fails under BASE's rules; the candidate's own ruff.toml is no part
    of them (scope refuses it as well)."""
    base, start, candidate = tune_trees
    (candidate / "solution" / "kernel.py").write_text(
        KERNEL.replace('"""\n', '"""\n\nimport math\n', 1)
    )
    verdicts = judge(tmp_path, base, start, candidate)
    assert verdicts["scope"].passed
    assert verdicts["ruff"].summary.startswith("ruff check: solution/kernel.py:")
    assert "F401" in verdicts["ruff"].details["check"]


SNIFFING_KERNEL = '''\
"""A solution's kernel that computes honestly only where a test runner is loaded."""

import sys


def scale(x):
    return x * 2 if "pytest" in sys.modules else x
'''


def test_a_solution_that_asks_where_it_runs_is_refused_by_the_tune_flows_scope(
    tmp_path, tune_trees
):
    base, start, candidate = tune_trees
    (candidate / "solution" / "kernel.py").write_text(SNIFFING_KERNEL)
    verdicts = judge(tmp_path, base, start, candidate)
    assert not verdicts["scope"].passed
    assert verdicts["scope"].summary.startswith(
        "solution/kernel.py:3: imports sys (a kernel may import only torch, "
    ), verdicts["scope"].summary
    assert "and its own files): solution code may not ask where or when it runs" in (
        verdicts["scope"].summary
    )


def test_a_read_the_tasks_baseline_makes_too_is_not_held_against_the_solution(tmp_path, tune_trees):
    base, start, candidate = tune_trees
    for tree in (start, candidate):  # the baseline kernel itself reads the loaded modules
        (tree / "task" / "solution").mkdir()
        (tree / "task" / "solution" / "kernel.py").write_text(SNIFFING_KERNEL)
    (candidate / "solution" / "kernel.py").write_text(SNIFFING_KERNEL.replace("x * 2", "x + x"))
    digest = digest_files(read_package_files(start / "task"))
    verdict = scope.check(start, candidate, digest)
    assert verdict.passed, verdict.summary
