"""The files one attempt leaves in `attempts/NNNN/`, written atomically and read back on resume."""

import json
from pathlib import Path
from typing import Any

from controller.runs.store import write_atomic, write_json_atomic
from gates.verdict import Verdict

START_FOLDER = "start"


def read_json(path: Path, default: Any = None) -> Any:
    """A JSON file's value, or `default` when it is absent."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


def save_prompt(attempt_dir: Path, prompt: str) -> None:
    write_atomic(attempt_dir / "prompt.md", prompt)


def save_session(attempt_dir: Path, result: Any, started_at: float, seconds: float) -> None:
    """transcript.json, usage.json, events.json (trace spans) and agent.json (why it stopped)."""
    write_json_atomic(attempt_dir / "transcript.json", result.transcript)
    write_json_atomic(attempt_dir / "usage.json", result.usage.model_dump(mode="json"))
    events = [event.model_dump(mode="json") for event in result.events]
    write_json_atomic(attempt_dir / "events.json", events)
    write_json_atomic(
        attempt_dir / "agent.json",
        {
            "exit_reason": result.exit_reason,
            "error": result.error,
            "started_at": started_at,
            "seconds": seconds,
        },
    )


def save_verdicts(attempt_dir: Path, verdicts: list[Verdict], started_at: float, seconds: float):
    """check.json first (every verdict, written in one atomic step), then one
    verdicts/<gate>.json per gate for reviewers; a check.json on disk is a complete check."""
    write_json_atomic(
        attempt_dir / "check.json",
        {
            "gates": [v.gate for v in verdicts],
            "started_at": started_at,
            "seconds": seconds,
            "verdicts": [v.model_dump(mode="json") for v in verdicts],
        },
    )
    for verdict in verdicts:
        write_json_atomic(verdict_path(attempt_dir, verdict.gate), verdict.model_dump(mode="json"))


def load_verdicts(attempt_dir: Path) -> list[Verdict]:
    """The verdicts an attempt's check recorded, in gate order; [] when it was never checked."""
    check = read_json(attempt_dir / "check.json", {"gates": []})
    if "verdicts" in check:
        return [Verdict.model_validate(verdict) for verdict in check["verdicts"]]
    return [
        Verdict.model_validate(read_json(verdict_path(attempt_dir, gate)))
        for gate in check["gates"]
    ]


def attempt_base(attempt_dir: Path, run_base: Path) -> Path:
    """The tree an attempt's candidate is compared with: the attempt's own `start/` when its
    flow built the workspace (tune: the incumbent and the task), else the run's BASE export."""
    start = attempt_dir / START_FOLDER
    return start if start.is_dir() else run_base


def verdict_path(attempt_dir: Path, gate: str) -> Path:
    safe = "".join(char if char.isalnum() or char in "-_." else "_" for char in gate)
    return attempt_dir / "verdicts" / f"{safe}.json"
