"""A batch from start to summary: tasks, preflights, the runs, then summary.md/json and the page.

`start_batch` creates `runs/batch-<UTC>-<hex>/` and freezes the selection and options in
`batch.json`; `run_batch` runs a batch folder, new or resumed: it carries on with every
operator that has not finished (an interrupted run is resumed, not restarted). The CLI
refuses a resume that names another selection or option before calling it.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from controller.batch import record as records
from controller.batch.preflight import (
    TASKS,
    Evaluator,
    preflight,
    preflight_hint,
    render_task,
    write_tasks,
)
from controller.batch.record import BatchRecord, RunOptions
from controller.batch.summary import BatchSummary, summarize_operator, write_summary
from controller.review_page import write_review_page


class Workers(Protocol):
    """Where the runs execute: this host's GPUs or a Ray cluster."""

    on_finished: Callable[[str, BatchRecord], None]
    """Called with each operator whose run ended (not interrupted) and the record then."""

    def run(self, record: BatchRecord, operators: list[str]) -> BatchRecord: ...


def start_batch(
    runs_dir: Path,
    operators: list[str],
    options: RunOptions,
    preflight: bool = True,
    capture: Path | None = None,
) -> Path:
    """Create the batch folder with its frozen `batch.json`; nothing runs yet. With `capture`
    (a `capture-ops` folder) every task is rendered first, so a bad capture is refused before
    any folder exists, and written now, so a resumed batch tunes what this one froze."""
    from controller.flows.tune import current_task_digest
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    for name in operators:
        current_task_digest(name)  # an unknown operator is refused before any folder exists
    source = str(Path(capture).resolve()) if capture is not None else None
    rendered = {name: render_task(name, source) for name in operators}
    record = records.new_record(operators, options, preflight, capture=source)
    folder = Path(runs_dir).resolve() / record.batch_id
    folder.mkdir(parents=True)
    for name, files in rendered.items():
        if files is not None:
            write_package(REGISTRY.declaration(name), folder / TASKS, files=files)
    records.save(folder, record)
    return folder


def run_batch(
    folder: Path,
    workers: Workers,
    evaluator: Evaluator | None = None,
    say: Callable[[str], None] = print,
) -> tuple[BatchRecord, BatchSummary]:
    """Tasks, preflights, then every unfinished operator's run; the summary at the end."""
    record = records.load(folder).model_copy(update={"state": "running"})
    records.save(folder, record)
    tasks = write_tasks(folder, list(record.operators), record.capture)
    try:
        record = _preflights(folder, record, tasks, evaluator, say)
    except KeyboardInterrupt:  # Ctrl-C while a baseline is evaluated: resumable like a run
        record = records.load(folder).model_copy(update={"state": "interrupted"})
        records.save(folder, record)  # the preflights done so far were saved one by one
        return record, _summarize(folder, record)
    total = len(record.operators)

    def finished(operator: str, current: BatchRecord) -> None:
        done = sum(1 for name in current.operators if current.entries[name].finished)
        row = summarize_operator(folder, operator, current.entries[operator])
        say(f"[{done}/{total}] {progress_text(row, current.options.device)}")

    workers.on_finished = finished
    record = workers.run(record, record.unfinished())
    if record.state != "interrupted":  # a run lost with its worker also leaves work to resume
        state = "interrupted" if record.unfinished() else "finished"
        record = record.model_copy(update={"state": state})
    records.save(folder, record)
    return record, _summarize(folder, record)


def _summarize(folder: Path, record: BatchRecord) -> BatchSummary:
    """The summary files, then the batch's review page, which reads them back."""
    summary = write_summary(folder, record)
    write_review_page(folder)
    return summary


def _preflights(folder: Path, record: BatchRecord, tasks, evaluator, say) -> BatchRecord:
    """Evaluate each pending operator's baseline once; a failure marks only that operator."""
    for name in record.operators:
        entry = record.entries[name]
        if not record.preflight or entry.status != "pending" or entry.preflight is not None:
            continue
        result = preflight(tasks[name], record.options.device, evaluator)
        changes: dict = {"preflight": result}
        if not result.passed:
            changes.update(status="preflight_failed", reason=f"{result.status}: {result.reason}")
        record = record.with_entry(name, **changes)
        records.save(folder, record)
        say(_preflight_line(name, result))
    return record


def _preflight_line(name: str, result) -> str:
    if not result.passed:
        hint = preflight_hint(result.status)
        return f"preflight {name}: {result.status} ({result.reason}); not tuned{hint}"
    if result.baseline_us is None:
        return f"preflight {name}: baseline PASSED (not timed on this device)"
    return f"preflight {name}: baseline PASSED, {result.baseline_us:.2f} us weighted"


def progress_text(row, device: str = "cuda") -> str:
    """One finished operator's line; the GPU slot it held is named only on CUDA."""
    speedup = f", x{row.speedup:.3f}" if row.speedup else ""
    weakest = (
        f" (weakest round x{row.weakest_round_speedup:.3f})" if row.weakest_round_speedup else ""
    )
    where = f" on GPU {row.device}" if row.device and device == "cuda" else ""
    reason = f": {row.stop_reason}" if row.stop_reason else ""
    return f"{row.operator} {row.status}{where}{speedup}{weakest}{reason}"
