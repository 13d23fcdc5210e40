"""What a candidate changed relative to BASE, computed from the two trees themselves.

The gates never trust a change list handed to them: they walk both trees, so a file the
agent slipped past the engine is still seen.
"""

import hashlib
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

SKIPPED_NAMES = frozenset({".git", "__pycache__", ".pytest_cache", ".ruff_cache"})


class TreeChange(BaseModel):
    """One path that differs between BASE and the candidate."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: Literal["added", "modified", "deleted"]


def tree_entries(root: Path) -> dict[str, Path]:
    """Every file and symlink under `root` by relative POSIX path, cache folders skipped."""
    root = Path(root)
    entries: dict[str, Path] = {}
    for folder, directories, files in os.walk(root, followlinks=False):
        directories[:] = sorted(d for d in directories if d not in SKIPPED_NAMES)
        here = Path(folder)
        for name in files + [d for d in directories if (here / d).is_symlink()]:
            path = here / name
            entries[path.relative_to(root).as_posix()] = path
    return entries


def _identity(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_changes(base: Path, candidate: Path) -> list[TreeChange]:
    """Added, modified and deleted paths, sorted by path."""
    before, after = tree_entries(base), tree_entries(candidate)
    changes = []
    for path in sorted(set(before) | set(after)):
        if path not in after:
            changes.append(TreeChange(path=path, kind="deleted"))
        elif path not in before:
            changes.append(TreeChange(path=path, kind="added"))
        elif _identity(before[path]) != _identity(after[path]):
            changes.append(TreeChange(path=path, kind="modified"))
    return changes


def changed_python_files(changes: list[TreeChange]) -> list[str]:
    return [c.path for c in changes if c.kind != "deleted" and c.path.endswith(".py")]


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def new_test_files(changes: list[TreeChange]) -> list[str]:
    """Test modules the candidate added (the tests a registration is expected to write)."""
    return [c.path for c in changes if c.kind == "added" and is_test_file(c.path)]
