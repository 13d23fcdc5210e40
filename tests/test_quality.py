"""The tree is ruff-clean: `ruff check` and `ruff format --check` pass."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_source_file_is_over_400_lines():
    """A long file holds more than one concept. Installed profiles are pinned copies, and a
    kernel that ships is one operator file by the solution layout its session writes."""
    exempt = ("tuned/", "kernels/")
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "*.py"], capture_output=True, text=True, check=True
    ).stdout.split()
    long_files = []
    for relative in tracked:
        path = ROOT / relative
        if relative.startswith(exempt) or not path.is_file():
            continue
        lines = path.read_text(errors="replace").count("\n")
        if lines > 400:
            long_files.append(f"{relative}: {lines} lines")
    assert long_files == []
