"""`batch.json`: what a batch was asked to do and where each operator's run stands.

The selection and the run options are frozen when the batch is created; `--resume` refuses
a different one, naming the field. Every change is written atomically (temp file, fsync,
rename), so a batch stopped at any point is read back whole.
"""

import datetime
import json
import secrets
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.errors import ControllerError
from controller.runs.store import write_json_atomic

BATCH_FILE = "batch.json"
OperatorStatus = Literal[
    "pending", "preflight_failed", "running", "interrupted", "done", "rejected", "failed"
]
FINISHED: frozenset[str] = frozenset({"preflight_failed", "done", "rejected", "failed"})


class RunOptions(BaseModel):
    """The `tune run` options every operator's run gets; frozen for the whole batch."""

    model_config = ConfigDict(frozen=True)

    agent: str = Field(description="agent spec, e.g. autotune or anthropic:<model>")
    device: Literal["cuda", "cpu"] = Field(description="where candidates are evaluated")
    target: str = Field(description="the target git repository")
    fence: str = "landlock"
    unfenced: bool = False
    base_url: str | None = None
    max_attempts: int | None = Field(None, ge=1)
    max_minutes: float | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, ge=1)
    max_dollars: float | None = Field(None, gt=0)
    patience: int | None = Field(None, ge=1)
    target_speedup: float | None = Field(None, gt=1)


class Preflight(BaseModel):
    """The baseline's evaluation before tuning: passed or not, and its time where timed."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    status: str
    reason: str = ""
    baseline_us: float | None = Field(None, description="weighted mean over the workloads")
    workloads_us: dict[str, float] = Field(default_factory=dict)
    seconds: float | None = Field(None, description="wall time of the baseline's evaluation")


class OperatorEntry(BaseModel):
    """One operator of the batch: its preflight, its run folder and how the run ended."""

    model_config = ConfigDict(frozen=True)

    status: OperatorStatus = "pending"
    preflight: Preflight | None = None
    run_dir: str | None = None
    exit_code: int | None = None
    device: str | None = Field(None, description="the GPU (or slot) the last run held")
    reason: str = ""

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class BatchRecord(BaseModel):
    """The contents of `batch.json`."""

    model_config = ConfigDict(frozen=True)

    batch_id: str
    created_at: str
    operators: tuple[str, ...] = Field(description="the selection, in the order given")
    options: RunOptions
    entries: dict[str, OperatorEntry]
    preflight: bool = Field(True, description="evaluate each baseline before tuning")
    capture: str | None = Field(
        None, description="the `capture-ops` folder the workloads come from (else the catalog's)"
    )
    state: Literal["running", "interrupted", "finished"] = "running"

    def with_entry(self, operator: str, **changes) -> "BatchRecord":
        entry = self.entries[operator].model_copy(update=changes)
        return self.model_copy(update={"entries": {**self.entries, operator: entry}})

    def unfinished(self) -> list[str]:
        return [name for name in self.operators if not self.entries[name].finished]


def new_batch_id() -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"batch-{stamp}-{secrets.token_hex(3)}"


def new_record(
    operators: list[str],
    options: RunOptions,
    preflight: bool = True,
    capture: str | None = None,
) -> BatchRecord:
    return BatchRecord(
        preflight=preflight,
        capture=capture,
        batch_id=new_batch_id(),
        created_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        operators=tuple(operators),
        options=options,
        entries={name: OperatorEntry() for name in operators},
    )


def save(folder: Path, record: BatchRecord) -> None:
    write_json_atomic(folder / BATCH_FILE, record.model_dump(mode="json"))


def load(folder: Path) -> BatchRecord:
    path = Path(folder) / BATCH_FILE
    if not path.is_file():
        raise ControllerError(f"{folder} is not a batch folder (no {BATCH_FILE})")
    try:
        return BatchRecord.model_validate(json.loads(path.read_text()))
    except (json.JSONDecodeError, ValidationError) as error:
        first = str(error).splitlines()[0]
        raise ControllerError(f"{path} is malformed ({first}); start a new batch") from None


def refuse_changed(
    record: BatchRecord, operators: list[str] | None, options: dict, capture: str | None = None
) -> None:
    """A resumed batch keeps its selection and options: name the first given one that differs."""
    if operators and tuple(operators) != record.operators:
        raise ControllerError(
            f"cannot resume {record.batch_id}: batch field 'operators' is "
            f"{list(record.operators)}, not {operators}; drop the operators or start a new batch"
        )
    if capture is not None and capture != record.capture:
        raise ControllerError(
            f"cannot resume {record.batch_id}: batch field 'capture' is {record.capture!r}, "
            f"not {capture!r}; drop --captured or start a new batch"
        )
    frozen = record.options.model_dump()
    for field, given in options.items():
        if given is not None and frozen.get(field) != given:
            raise ControllerError(
                f"cannot resume {record.batch_id}: batch field 'options.{field}' is "
                f"{frozen.get(field)!r}, not {given!r}; drop the option or start a new batch"
            )
