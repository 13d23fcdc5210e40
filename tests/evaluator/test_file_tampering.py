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


AUDIT_SCRIPT = """
import os, shutil, sys, tempfile
from gates.evaluator.detectors.introspection import AuditMonitor

protected, elsewhere = sys.argv[1], sys.argv[2]
monitor = AuditMonitor([], [], protected_dirs=[protected])
monitor.armed = True
"""


def _audit(tmp_path, tail: str) -> str:
    import subprocess
    import sys

    protected, elsewhere = tmp_path / "protected", tmp_path / "elsewhere"
    for folder in (protected, elsewhere):
        folder.mkdir()
        (folder / "module.py").write_text("x = 1\n")
    done = subprocess.run(
        [sys.executable, "-c", AUDIT_SCRIPT + tail, str(protected), str(elsewhere)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert (protected / "module.py").read_text() == "x = 1\n"
    return done.stdout + done.stderr


def test_removing_a_file_by_name_under_another_folder_is_not_a_protected_write(tmp_path):
    """Triton builds its launcher in a temporary folder that `shutil.rmtree` removes by
    `os.remove(name, dir_fd=...)`: with the working directory protected, that name must be
    resolved against the descriptor's folder (an H200 run rejected an honest solution)."""
    tail = (
        "os.chdir(protected)\n"  # a bare name names a protected file, unless a dir_fd says not
        "shutil.rmtree(elsewhere)\n"  # unlinks module.py relative to a descriptor of elsewhere
        "print('rmtree elsewhere:', len(monitor.findings))\n"
    )
    output = _audit(tmp_path, tail)
    assert "rmtree elsewhere: 0" in output, output


def test_a_protected_folder_cannot_be_opened_to_write_through_its_descriptor(tmp_path):
    tail = "os.chdir(os.path.dirname(protected))\nfolder = os.open(protected, os.O_RDONLY)\n"
    output = _audit(
        tmp_path, tail + "os.open('module.py', os.O_WRONLY | os.O_TRUNC, dir_fd=folder)"
    )
    assert "PermissionError" in output and "is protected" in output, output


def test_removing_through_a_protected_folders_descriptor_is_refused(tmp_path):
    tail = (
        "os.chdir(os.path.dirname(protected))\n"
        "monitor.armed = False\n"
        "folder = os.open(protected, os.O_RDONLY)\n"
        "monitor.armed = True\n"
        "os.remove('module.py', dir_fd=folder)\n"
    )
    output = _audit(tmp_path, tail)
    assert "PermissionError" in output and "protected during the evaluation" in output, output
