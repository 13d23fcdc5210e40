"""The figures of the evaluation that promoted an export, read through the tune run's own
reader (`gates.tuning.reading`), so the batch summary and the run's report cannot disagree:
per workload the baseline's and the tuned kernel's per-call times warm and cold, the figure
promotion used and the paired ratio on each; per operator the model-time speedup."""

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gates.evaluator.results import Figure, RatioInterval
from gates.tuning.reading import WorkloadLatency, read_evaluation

COMPARED_ROLE = "baseline"  # the production kernel: what the summary compares against


class WorkloadFigures(BaseModel):
    """One workload of the promoting evaluation; a figure it did not take is None."""

    model_config = ConfigDict(frozen=True)

    workload: str
    promotion_figure: Figure = Field(description="the figure promotion judged this workload on")
    calls_per_forward: float = Field(
        description="its weight in the model's time (the declared weight where none is known)"
    )
    weight_source: str | None = Field(None, description="captured, declared or declared-weight")
    baseline_warm_us: float | None = None
    tuned_warm_us: float | None = None
    baseline_cold_us: float | None = None
    tuned_cold_us: float | None = None
    warm_ratio: RatioInterval | None = Field(
        None, description="tuned over baseline on the warm figure, paired (below 1 is faster)"
    )
    cold_ratio: RatioInterval | None = Field(
        None, description="tuned over baseline on the cold figure, paired (below 1 is faster)"
    )
    model_time_share: float | None = Field(None, description="its share of the baseline's time")


class ExportFigures(BaseModel):
    """An operator's figures from its promoting evaluation."""

    model_config = ConfigDict(frozen=True)

    baseline_us: float | None = Field(
        None, description="per call, weighted by calls per forward, on each promotion figure"
    )
    tuned_us: float | None = Field(None, description="the same for the exported kernel")
    model_time_speedup: float | None = Field(
        None, description="the model's time with the baseline over its time with the export"
    )
    model_time_ratio: RatioInterval | None = Field(
        None, description="promotion's paired model-time ratio, tuned over baseline"
    )
    weakest_round_speedup: float | None = Field(
        None, description="the smallest model-time speedup over the paired timing rounds"
    )
    weights_source: str | None = None
    workloads: list[WorkloadFigures] = Field(default_factory=list)


def export_figures(export: Path) -> ExportFigures | None:
    """The figures of the export's promoting evaluation (its last), or None if untimed."""
    evaluations = sorted((export / "evaluations").glob("*.json"))
    if not evaluations:
        return None
    evaluation = json.loads(evaluations[-1].read_text())
    reading = read_evaluation(evaluation)
    if not reading.timed:
        return None
    timing = evaluation.get("timing") or {}
    rows = timing.get("workloads") or {}
    against = ((timing.get("promotion") or {}).get("against") or {}).get(COMPARED_ROLE) or {}
    total = sum(row.model_calls for row in reading.workloads) or 1.0
    baseline = sum(row.model_calls * row.baseline_us for row in reading.workloads) / total
    tuned = sum(row.model_calls * row.candidate_us for row in reading.workloads) / total
    return ExportFigures(
        baseline_us=baseline,
        tuned_us=tuned,
        model_time_speedup=reading.weighted_speedup(),
        model_time_ratio=_interval(against.get("weighted")),
        weakest_round_speedup=_weakest_round(reading.workloads, rows),
        weights_source=reading.weights_source(),
        workloads=[_workload(row, against) for row in reading.workloads],
    )


def _workload(row: WorkloadLatency, against: dict) -> WorkloadFigures:
    """One row; its ratios from promotion's comparison with the baseline (an export made
    before promotion recorded both figures has only the promotion figure's)."""
    ratios = (against.get("figures") or {}).get(row.name)
    if ratios is None and row.name in (against.get("workloads") or {}):
        ratios = {row.promotion_figure: against["workloads"][row.name]}
    ratios = ratios or {}
    return WorkloadFigures(
        workload=row.name,
        promotion_figure=row.promotion_figure,
        calls_per_forward=row.model_calls,
        weight_source=row.weight_source,
        baseline_warm_us=row.baseline_warm_us,
        tuned_warm_us=row.candidate_warm_us,
        baseline_cold_us=row.baseline_cold_us,
        tuned_cold_us=row.candidate_cold_us,
        warm_ratio=_interval(ratios.get("warm")),
        cold_ratio=_interval(ratios.get("cold")),
        model_time_share=(against.get("model_time_share") or {}).get(row.name),
    )


def _interval(data: dict | None) -> RatioInterval | None:
    """A recorded ratio interval; None where there was none (or no pairs gave one)."""
    if not data or data.get("ratio") is None:
        return None
    try:
        return RatioInterval.model_validate(data)
    except ValidationError:  # an interval without ends (too few pairs) is shown as "-"
        return None


def _weakest_round(workloads: tuple[WorkloadLatency, ...], rows: dict) -> float | None:
    """min over rounds r of the model's time with the baseline over its time with the export,
    from each workload's round medians (taken on its promotion figure)."""
    medians = {
        row.name: (
            rows[row.name].get("baseline_round_medians_us") or [],
            rows[row.name].get("candidate_round_medians_us") or [],
        )
        for row in workloads
    }
    rounds = min((min(len(b), len(c)) for b, c in medians.values()), default=0)
    speedups = []
    for index in range(rounds):
        baseline = sum(row.model_calls * medians[row.name][0][index] for row in workloads)
        tuned = sum(row.model_calls * medians[row.name][1][index] for row in workloads)
        if tuned > 0:
            speedups.append(baseline / tuned)
    return min(speedups) if speedups else None
