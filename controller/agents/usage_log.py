"""A session's spend written after every model call, durably, before the next call starts.

A run killed mid-session (SIGKILL, a lost machine) never reaches the point where the session's
usage is journaled; the engine then reads the last line here, so every call made before the
kill stays in the run's totals.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from controller.agents.base import Usage

FILE_NAME = "usage.jsonl"


class UsageLog:
    """Appends the session's running usage, one JSON line per model call, flushed to disk."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def record(self, usage: Usage) -> None:
        if self.path is None:
            return
        line = json.dumps(usage.model_dump(mode="json"), sort_keys=True) + "\n"
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def last_usage(path: Path) -> dict | None:
    """The running usage as of the last complete line (a line cut by a kill is ignored)."""
    if not path.is_file():
        return None
    found = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        try:
            found = Usage.model_validate(value).model_dump(mode="json")
        except ValueError:
            continue
    return found
