"""Scripted sessions and arguments for register-flow tests on the gate tests' fixture target."""

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gates"))

from target_fixture import GOOD_EDITS, vision, write_target  # noqa: E402,F401

SITE_ARGUMENTS = [
    "--call-site",
    "model/vision.py:VisionBlock.forward",
    "--call-site",
    "model/vision.py:VisionProjector.forward",
]


def good_actions(routed_projector: bool = True) -> list[dict]:
    """Tool actions that write the good registration (optionally forgetting one site)."""
    edits = dict(GOOD_EDITS)
    if not routed_projector:
        edits["model/vision.py"] = vision(projector=False)
    return [{"tool": "write", "path": path, "content": text} for path, text in edits.items()]


def git(repo: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *arguments], capture_output=True, text=True, check=True
    ).stdout.strip()


def only_run(tmp_path) -> Path:
    (run,) = (tmp_path / "runs").glob("register-*")
    return run


def expected_tree(target: Path, tmp_path: Path) -> str:
    """The tree id BASE plus the good edits has (git tree ids depend on content only)."""
    copy = tmp_path / "expected"
    subprocess.run(["git", "clone", "-q", str(target), str(copy)], check=True)
    for path, text in GOOD_EDITS.items():
        (copy / path).write_text(text)
    git(copy, "add", "-A")
    return git(copy, "write-tree")
