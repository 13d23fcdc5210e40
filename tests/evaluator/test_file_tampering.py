"""A solution that rewrites files later evaluations trust is rejected: through Python (the
audit hook refuses the write) or through a shared file mapping (the controller's snapshot of
the sources sees the change). The target module is restored whatever happens."""

from pathlib import Path

import pytest
from cheat_packing import cheat_solution

import operators.catalog.shapes as target

TARGET = Path(target.__file__)


@pytest.fixture
def restored_target():
    original = TARGET.read_bytes()
    try:
        yield original
    finally:
        if TARGET.read_bytes() != original:
            TARGET.write_bytes(original)


def test_a_python_write_into_the_repository_is_refused(task_root, tmp_path, restored_target):
    from gates.evaluator.evaluation import evaluate

    solution = cheat_solution("source_rewrite", tmp_path)
    result = evaluate(task_root / "rms_norm", solution, device="cpu")
    assert result.status == "REJECTED", result.reason
    assert result.detector == "introspection" and "writes" in result.reason, result.reason
    assert TARGET.read_bytes() == restored_target, "the write reached the file"


def test_a_mapped_write_into_the_repository_is_seen_by_the_snapshot(
    task_root, tmp_path, restored_target
):
    from gates.evaluator.evaluation import evaluate

    solution = cheat_solution("mapped_rewrite", tmp_path)
    result = evaluate(task_root / "rms_norm", solution, device="cpu")
    assert result.status == "REJECTED", result.reason
    assert result.detector == "tampering", result.reason
    assert str(TARGET) in result.reason and "git checkout" in result.reason
