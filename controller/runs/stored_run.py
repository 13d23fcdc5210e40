"""A stored run read in one pass: its manifest and journal into the typed model that resuming
and the engine use, so no step of a resume reads either file again."""

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from controller.errors import ControllerError
from controller.runs.history import RunHistory, summarize
from controller.runs.journal import read_journal
from controller.runs.manifest import (
    Manifest,
    first_difference,
    manifest_from_stored,
    read_manifest_file,
)
from controller.runs.statemachine import RunState, replay
from controller.runs.store import RunStore


class StoredRun(BaseModel):
    """What a run folder holds: the verified manifest, the journal's events (a torn last line
    left out), and the state and history they describe."""

    model_config = ConfigDict(frozen=True)

    run_dir: Path
    manifest: Manifest
    events: tuple[dict[str, Any], ...]
    journal_bytes: int
    state: RunState
    history: RunHistory

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    def is_current(self) -> bool:
        """True while the journal is as it was read (a process working on the run since then
        would have appended to it)."""
        return _size(self.run_dir / "journal.jsonl") == self.journal_bytes


def read_stored_run(store: RunStore) -> StoredRun:
    """Read manifest.json and journal.jsonl once; refuse, naming the field, a manifest edited
    after the run was created."""
    name = store.run_id
    stored = read_manifest_file(store.manifest_path)
    size = _size(store.journal_path)
    events = read_journal(store.journal_path)
    created = next((e for e in events if e.get("kind") == "created"), None)
    if created is not None and isinstance(stored.get("manifest"), dict):
        changed = first_difference(created["manifest"], stored["manifest"])
        if changed:
            raise ControllerError(
                f"cannot resume {name}: manifest field '{changed}' was changed after the run "
                "was created; restore it or start a new run"
            )
    return StoredRun(
        run_dir=store.run_dir,
        manifest=manifest_from_stored(stored, f"cannot resume {name}"),
        events=tuple(events),
        journal_bytes=size,
        state=replay(name, events),
        history=summarize(events),
    )


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0
