"""`summary.json` and `summary.md`: per operator the speedup in model time (the figure the
tune run's report prints), the weakest paired round's, what stopped the run and where its export
is; per workload the evaluator's warm and cold times and ratios behind them."""

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, computed_field

from controller.batch.devices import overlapping_holds, read_holds
from controller.batch.evaluation_windows import (
    EvaluationWindow,
    evaluation_windows,
    overlapping_windows,
)
from controller.batch.export_figures import WorkloadFigures, export_figures
from controller.batch.preflight import preflight_hint
from controller.batch.record import BatchRecord, OperatorEntry
from controller.batch.runs import run_folder, run_state
from controller.runs.store import write_atomic, write_json_atomic
from gates.evaluator.results import RatioInterval

SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"


class OperatorSummary(BaseModel):
    """One operator's outcome, as the summary tables show it."""

    model_config = ConfigDict(frozen=True)

    operator: str
    status: str
    baseline_us: float | None = Field(
        None, description="production kernel, per call weighted by calls per forward"
    )
    tuned_us: float | None = Field(None, description="exported kernel, weighted the same")
    model_time_speedup: float | None = Field(
        None, description="the model's time with production over its time with the export"
    )
    model_time_ratio: RatioInterval | None = Field(
        None, description="promotion's paired model-time ratio, tuned over production"
    )
    weakest_round_speedup: float | None = Field(
        None, description="the smallest model-time speedup over the paired timing rounds"
    )
    weights_source: str | None = Field(None, description="where calls per forward came from")
    workloads: list[WorkloadFigures] = Field(
        default_factory=list, description="the promoting evaluation's figures, per workload"
    )
    stop_reason: str = ""
    export: str | None = None
    run_dir: str | None = None
    device: str | None = None

    @computed_field
    @property
    def speedup(self) -> float | None:
        """The headline speedup, under the name the progress line, the batch page and
        `optimize` read: the model-time figure."""
        return self.model_time_speedup


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
        reason += preflight_hint(preflight.status)
        return row.model_copy(update={"stop_reason": reason})
    export = run_dir / "export" if run_dir else None
    if export is None or not (export / "export.json").is_file():
        return row
    figures = export_figures(export)
    timed = dict(figures) if figures is not None else {}
    return row.model_copy(update={"export": str(export), **timed})


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
        "| operator | status | baseline us | tuned us | speedup in model time | weakest round "
        "| stop reason | export |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for row in summary.operators:
        reason = row.stop_reason.replace("|", "/").replace("\n", " ")
        lines.append(
            f"| {row.operator} | {row.status} | {_figure(row.baseline_us, '.2f')} "
            f"| {_figure(row.tuned_us, '.2f')} | {_figure(row.model_time_speedup, '.3f')} "
            f"| {_figure(row.weakest_round_speedup, '.3f')} | {reason} "
            f"| {row.export or '-'} |"
        )
    lines += ["", device_check(summary), ""]
    for row in summary.operators:
        lines += workload_table(row)
    return "\n".join(lines)


def workload_table(row: OperatorSummary) -> list[str]:
    """The evaluator's figures behind one operator's speedup, so a workload slower on the
    figure promotion did not use (often cold) is seen before the export is installed."""
    if not row.workloads:
        return []
    speedup = row.model_time_speedup
    headline = f"x{speedup:.3f} in model time" if speedup else "no model-time speedup"
    lines = [
        f"## {row.operator}: {headline}",
        "",
        f"Per-call times of the promoting evaluation; weights: calls per forward "
        f"({row.weights_source or '-'}); ratios are tuned over baseline, the median of the "
        "paired ratios (below 1 is faster).",
        "",
        "| workload | calls per forward | promotion figure | baseline warm us | tuned warm us "
        "| warm ratio | baseline cold us | tuned cold us | cold ratio |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for workload in row.workloads:
        warm, cold = (
            ratio.ratio if ratio else None for ratio in (workload.warm_ratio, workload.cold_ratio)
        )
        lines.append(
            f"| {workload.workload} | {_figure(workload.calls_per_forward, 'g')} "
            f"| {workload.promotion_figure} | {_figure(workload.baseline_warm_us, '.2f')} "
            f"| {_figure(workload.tuned_warm_us, '.2f')} | {_figure(warm, '.3f')} "
            f"| {_figure(workload.baseline_cold_us, '.2f')} "
            f"| {_figure(workload.tuned_cold_us, '.2f')} | {_figure(cold, '.3f')} |"
        )
    return [*lines, ""]


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
