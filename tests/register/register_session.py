"""Scripted sessions and arguments for register-flow tests on the gate tests' fixture target."""

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
