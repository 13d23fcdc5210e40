"""The run journal: one JSON line per event, fsync'd before the step it announces begins.

The journal is the run's source of truth: `state.json` and the evidence are rebuilt from it, so
a process killed at any point resumes from the last event that reached the disk.

Test hook (inert unless set): `CONTROLLER_TEST_KILL_AT=<n>` makes the process SIGKILL itself
right after the n-th event it appends has been fsync'd. The crash-safety tests use it to kill
the controller at every transition in turn; nothing else reads it.
"""

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from controller.errors import ControllerError
from controller.runs.faults import fault_point

KILL_AT_VARIABLE = "CONTROLLER_TEST_KILL_AT"
TAIL_CHUNK = 4096


class Journal:
    """Appends events to `journal.jsonl`; each carries a sequence number and run-time seconds."""

    def __init__(self, path: Path, events: list[dict[str, Any]] | None = None) -> None:
        """`events`: the journal's events when the caller has just read them."""
        self.path = path
        events = read_journal(path) if events is None else events
        self._next_sequence = events[-1]["seq"] + 1 if events else 1
        self._elapsed_before = float(events[-1].get("elapsed_s", 0.0)) if events else 0.0
        self._session_start = time.monotonic()
        self._appended = 0
        self._kill_at = _kill_at_from_environment()
        self.dropped_bytes = _repair_torn_tail(path)

    def elapsed_s(self) -> float:
        """Seconds this run has been active, summed over every process that worked on it."""
        return self._elapsed_before + (time.monotonic() - self._session_start)

    def append(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Durably record one event and return it."""
        event = {
            "seq": self._next_sequence,
            "kind": kind,
            "at": time.time(),
            "elapsed_s": round(self.elapsed_s(), 6),
            **fields,
        }
        line = json.dumps(event, sort_keys=True, default=str) + "\n"
        with open(self.path, "a", encoding="utf-8") as handle:
            try:
                fault_point(_label(event), self.path)
            except OSError:  # a full disk tears the line: write half of it, as one would
                handle.write(line[: len(line) // 2])
                handle.flush()
                raise
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        self._next_sequence += 1
        self._appended += 1
        if self._kill_at is not None and self._appended == self._kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return event


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Every complete event; a torn last line (the process died mid-write) is ignored."""
    if not path.exists():
        return []
    events = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines) - 1:
                break
            raise ControllerError(
                f"{path} line {number + 1} is not valid JSON; the run cannot be resumed, "
                "start a new run"
            ) from None
    return events


def torn_tail_bytes(path: Path) -> int:
    """How many bytes of a partial last line (the process died mid-write) the journal ends in."""
    if not path.exists():
        return 0
    with open(path, "rb") as handle:  # read back from the end only as far as the last newline
        size = end = handle.seek(0, os.SEEK_END)
        while end > 0:
            start = max(0, end - TAIL_CHUNK)
            handle.seek(start)
            chunk = handle.read(end - start)
            if end == size and chunk.endswith(b"\n"):
                return 0
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                return size - (start + newline + 1)
            end = start
        return size


def _repair_torn_tail(path: Path) -> int:
    """Drop a partial last line so the next event starts on a line of its own; its size."""
    dropped = torn_tail_bytes(path)
    if dropped:
        with open(path, "r+b") as handle:
            handle.truncate(path.stat().st_size - dropped)
            handle.flush()
            os.fsync(handle.fileno())
    return dropped


def _label(event: dict[str, Any]) -> str:
    """The fault-point label of an append: its kind, and for a transition the state entered."""
    target = f" -> {event['to']}" if event["kind"] == "transition" else ""
    return f"journal {event['kind']}{target}"


def _kill_at_from_environment() -> int | None:
    value = os.environ.get(KILL_AT_VARIABLE, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None
