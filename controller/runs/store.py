"""The run folder `runs/<flow>-<UTC>-<hex>/`: where every record of a run is written, atomically.

manifest.json      frozen manifest and its digest
journal.jsonl      append-only, fsync'd events (the source of truth)
state.json         where the run stands (atomic replace after each transition)
base/              pristine export of BASE (what candidates are compared with)
prepared/          whatever the flow's prepare step records
attempts/NNNN/     prompt.md, transcript.json, usage.json, events.json, diff.patch,
                   candidate/, verdicts/<gate>.json, attempt.json, workspace/
evidence/          report.md, report.json, trace.json
lock               held with flock by the one process working on the run
"""

import contextlib
import datetime
import fcntl
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from controller.errors import ControllerError
from controller.runs.faults import fault_point
from controller.runs.history import RunHistory, summarize
from controller.runs.journal import Journal, read_journal, torn_tail_bytes
from controller.runs.manifest import Manifest, manifest_from_stored, read_manifest_file
from controller.runs.statemachine import RunState, replay


def write_atomic(path: Path, content: str, label: str | None = None) -> None:
    """Write via a temp file, fsync and rename, so readers see the old or the new file whole.

    A failed write (a full disk) removes its temp file and leaves the old file as it was.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(content)
            fault_point(label or write_label(path), path)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def write_json_atomic(path: Path, value: Any, label: str | None = None) -> None:
    text = json.dumps(value, indent=2, sort_keys=True, default=str) + "\n"
    write_atomic(path, text, label)


def write_label(path: Path) -> str:
    """The fault-point label of a run-folder file, without the attempt number."""
    parts = path.parts
    if "attempts" in parts:
        index = len(parts) - 1 - parts[::-1].index("attempts")
        return "write attempt/" + "/".join(parts[index + 2 :])
    if path.parent.name in {"evidence", "prepared"}:
        return f"write {path.parent.name}/{path.name}"
    return f"write {path.name}"


def new_run_id(flow: str) -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{flow}-{stamp}-{secrets.token_hex(3)}"


class RunStore:
    """One run folder; knows its paths, reads its records and holds its lock."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir.resolve()
        self._lock_handle = None
        self.journal: Journal | None = None

    @classmethod
    def create(cls, runs_dir: Path, manifest: Manifest) -> "RunStore":
        """Stage the folder with its manifest, then rename it into place."""
        runs_dir.mkdir(parents=True, exist_ok=True)
        staging = runs_dir / f".{manifest.run_id}.partial"
        staging.mkdir()
        try:
            write_json_atomic(staging / "manifest.json", manifest.stored_form())
            os.replace(staging, runs_dir / manifest.run_id)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return cls(runs_dir / manifest.run_id)

    @classmethod
    def open(cls, run: str | Path, runs_dir: Path | None = None) -> "RunStore":
        """A run named by its folder or by its id under `runs_dir`."""
        candidates = [Path(run)]
        if runs_dir is not None:
            candidates.append(runs_dir / str(run))
        for candidate in candidates:
            if (candidate / "manifest.json").is_file():
                return cls(candidate)
        raise ControllerError(f"no run folder {run!s} (looked for manifest.json); check the path")

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    @property
    def manifest_path(self) -> Path:
        return self.run_dir / "manifest.json"

    @property
    def journal_path(self) -> Path:
        return self.run_dir / "journal.jsonl"

    @property
    def state_path(self) -> Path:
        return self.run_dir / "state.json"

    @property
    def base_path(self) -> Path:
        return self.run_dir / "base"

    @property
    def prepared_dir(self) -> Path:
        return self.run_dir / "prepared"

    @property
    def evidence_dir(self) -> Path:
        return self.run_dir / "evidence"

    def attempt_dir(self, number: int) -> Path:
        return self.run_dir / "attempts" / f"{number:04d}"

    def manifest(self) -> Manifest:
        return manifest_from_stored(read_manifest_file(self.manifest_path), str(self.manifest_path))

    def manifest_for_reading(self) -> tuple[Manifest, list[str]]:
        """The manifest for a read-only look, and warnings: an edited manifest or a torn journal
        line is shown with a warning rather than refused (resuming still refuses an edit)."""
        warnings = []
        dropped = torn_tail_bytes(self.journal_path)
        if dropped:
            warnings.append(
                f"journal.jsonl ends in a torn line ({dropped} bytes, a write cut short); it is "
                "ignored here and dropped when the run resumes"
            )
        try:
            return self.manifest(), warnings
        except ControllerError as error:
            stored = read_manifest_file(self.manifest_path).get("manifest")
            try:
                manifest = Manifest.model_validate(stored)
            except ValidationError:
                raise error from None
        warnings.append(
            "manifest.json was edited after the run was created (its digest does not match); "
            "shown read-only, and the run cannot be resumed"
        )
        return manifest, warnings

    def events(self) -> list[dict]:
        return read_journal(self.journal_path)

    def state(self) -> RunState:
        """The state the journal describes (state.json may lag by one transition)."""
        return replay(self.run_id, self.events())

    def history(self) -> RunHistory:
        return summarize(self.events())

    def write_state(self, state: RunState) -> None:
        label = f"write state.json ({state.state})"
        write_json_atomic(self.state_path, state.model_dump(mode="json"), label)

    def open_journal(self, events=None) -> Journal:
        """The journal for appending; `events` spares a re-read when they were just read."""
        self.journal = Journal(self.journal_path, None if events is None else list(events))
        return self.journal

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the run's lock for the block; refuse if another process holds it."""
        with open(self.run_dir / "lock", "a+", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "unknown"
                raise ControllerError(
                    f"run {self.run_id} is in use by another process (pid {holder}); "
                    "wait for it or stop it first"
                ) from None
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def lock_holder(self) -> str | None:
        """The pid holding the lock, or None when no process is working on the run."""
        path = self.run_dir / "lock"
        if not path.exists():
            return None
        with open(path, "a+", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                return handle.read().strip() or "unknown"
            fcntl.flock(handle, fcntl.LOCK_UN)
        return None
