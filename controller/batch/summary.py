"""`summary.json` and `summary.md`: per operator the baseline, the tuned time, the speedup
from the weakest paired round, what stopped the run and where its export is."""

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from controller.batch.devices import overlapping_holds, read_holds
from controller.batch.evaluation_windows import (
    EvaluationWindow,
    evaluation_windows,
    overlapping_windows,
)
from controller.batch.record import BatchRecord, OperatorEntry
from controller.batch.runs import run_folder, run_state
from controller.runs.store import write_atomic, write_json_atomic

SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"


class OperatorSummary(BaseModel):
    """One operator's outcome, as the summary tables show it."""

    model_config = ConfigDict(frozen=True)

    operator: str
    status: str
    baseline_us: float | None = Field(None, description="weighted mean, production kernel")
    tuned_us: float | None = Field(None, description="weighted mean, exported kernel")
    speedup: float | None = Field(None, description="weighted, over the production kernel")
    weakest_round_speedup: float | None = Field(
        None, description="the smallest weighted speedup over the paired timing rounds"
    )
    stop_reason: str = ""
    export: str | None = None
    run_dir: str | None = None
    device: str | None = None


class BatchSummary(BaseModel):
    """The batch's outcome: one row per operator, and the check that no two evaluations
    held one GPU at once (from the device holds and the runs' journals)."""

    model_config = ConfigDict(frozen=True)

    batch_id: str
    state: str
    operators: list[OperatorSummary]
    device_holds: int
    overlapping_device_holds: int
    evaluations: list[EvaluationWindow] = Field(default_factory=list)
    overlapping_evaluations: int = 0
    evaluations_outside_holds: int = 0


def summarize_operator(batch: Path, operator: str, entry: OperatorEntry) -> OperatorSummary:
    run_dir = run_folder(batch, operator)
    state = run_state(run_dir)
    preflight = entry.preflight
    row = OperatorSummary(
        operator=operator,
        status=entry.status,
        baseline_us=preflight.baseline_us if preflight else None,
        stop_reason=entry.reason or state.get("reason") or "",
        run_dir=str(run_dir) if run_dir else None,
        device=entry.device,
    )
    if entry.status == "preflight_failed" and preflight is not None:
        reason = f"preflight {preflight.status}: {preflight.reason}".rstrip(": ")
        return row.model_copy(update={"stop_reason": reason})
    export = run_dir / "export" if run_dir else None
    if export is None or not (export / "export.json").is_file():
        return row
    figures = export_figures(export)
    return row.model_copy(update={"export": str(export), **figures})


def export_figures(export: Path) -> dict:
    """Baseline and tuned weighted times, the speedup and the weakest round's, from the
    evaluation that promoted the exported kernel."""
    evaluations = sorted((export / "evaluations").glob("*.json"))
    if not evaluations:
        return {}
    timing = json.loads(evaluations[-1].read_text()).get("timing") or {}
    rows = list((timing.get("workloads") or {}).values())
    if not rows:
        return {}
    total = sum(row.get("weight", 1.0) for row in rows) or 1.0

    def weighted(key: str) -> float:
        return sum(row.get("weight", 1.0) * row[key] for row in rows) / total

    baseline, tuned = weighted("baseline_median_us"), weighted("candidate_median_us")
    return {
        "baseline_us": baseline,
        "tuned_us": tuned,
        "speedup": baseline / tuned if tuned > 0 else None,
        "weakest_round_speedup": _weakest_round(rows),
    }


def _weakest_round(rows: list[dict]) -> float | None:
    """min over rounds r of sum(w * baseline_r) / sum(w * candidate_r)."""
    rounds = min(
        (
            min(
                len(row.get("baseline_round_medians_us") or []),
                len(row.get("candidate_round_medians_us") or []),
            )
            for row in rows
        ),
        default=0,
    )
    speedups = []
    for index in range(rounds):
        baseline = sum(r.get("weight", 1.0) * r["baseline_round_medians_us"][index] for r in rows)
        tuned = sum(r.get("weight", 1.0) * r["candidate_round_medians_us"][index] for r in rows)
        if tuned > 0:
            speedups.append(baseline / tuned)
    return min(speedups) if speedups else None


def write_summary(batch: Path, record: BatchRecord) -> BatchSummary:
    holds = read_holds(batch)
    windows = evaluation_windows(batch)
    summary = BatchSummary(
        batch_id=record.batch_id,
        state=record.state,
        operators=[
            summarize_operator(batch, name, record.entries[name]) for name in record.operators
        ],
        device_holds=len(holds),
        overlapping_device_holds=len(overlapping_holds(holds)),
        evaluations=windows,
        overlapping_evaluations=len(overlapping_windows(windows)),
        evaluations_outside_holds=sum(1 for window in windows if window.gpu is None),
    )
    write_json_atomic(batch / SUMMARY_JSON, summary.model_dump(mode="json"))
    write_atomic(batch / SUMMARY_MD, render_markdown(summary, record))
    from controller.review_page import write_review_page  # the page reads the summary back

    write_review_page(batch)
    return summary


def _figure(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def render_markdown(summary: BatchSummary, record: BatchRecord) -> str:
    options = record.options
    lines = [
        f"# Batch {summary.batch_id}: {summary.state}",
        "",
        f"Agent `{options.agent}`, device `{options.device}`, target `{options.target}`; "
        f"{len(summary.operators)} operators; workloads "
        + (f"captured in `{record.capture}`." if record.capture else "from the catalog."),
        "",
        "| operator | status | baseline us | tuned us | speedup | weakest round | stop reason "
        "| export |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for row in summary.operators:
        reason = row.stop_reason.replace("|", "/").replace("\n", " ")
        lines.append(
            f"| {row.operator} | {row.status} | {_figure(row.baseline_us, '.2f')} "
            f"| {_figure(row.tuned_us, '.2f')} | {_figure(row.speedup, '.3f')} "
            f"| {_figure(row.weakest_round_speedup, '.3f')} | {reason} "
            f"| {row.export or '-'} |"
        )
    lines += ["", device_check(summary), ""]
    return "\n".join(lines)


def device_check(summary: BatchSummary) -> str:
    """One sentence a reviewer can act on: did two runs or evaluations share a GPU?"""
    counts = (
        f"{summary.device_holds} device holds (`device-holds.jsonl`), "
        f"{len(summary.evaluations)} evaluations (the runs' `checking` intervals)"
    )
    problems = []
    if summary.overlapping_device_holds:
        problems.append(f"{summary.overlapping_device_holds} pairs of holds overlapped on a GPU")
    if summary.overlapping_evaluations:
        problems.append(f"{summary.overlapping_evaluations} pairs of evaluations overlapped")
    if summary.evaluations_outside_holds:
        problems.append(f"{summary.evaluations_outside_holds} evaluations ran outside any hold")
    if problems:
        return f"{counts}: " + "; ".join(problems) + "; these timings are not trustworthy."
    return f"{counts}: no two held one GPU at once."
