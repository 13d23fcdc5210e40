"""The one place that reads the evaluator's result, so a change to its shape is a local fix.

Everything the tune flow and its gates need from an evaluation (status, findings, per-workload
latencies with their round-to-round interval, the promotion verdict) is copied into typed models
here; nothing else looks inside `EvaluationResult.timing`.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict


class WorkloadLatency(BaseModel):
    """One workload's per-call medians (microseconds) for each timed role."""

    model_config = ConfigDict(frozen=True)

    name: str
    weight: float = 1.0
    candidate_us: float
    baseline_us: float
    incumbent_us: float | None = None
    floor_us: float | None = None
    speedup_low: float | None = None
    """The smallest per-round speedup over the baseline (the interval's lower end)."""
    speedup_high: float | None = None

    @property
    def speedup(self) -> float:
        """Baseline median over candidate median: above 1 is faster than production."""
        return self.baseline_us / self.candidate_us if self.candidate_us > 0 else 0.0

    @property
    def versus_incumbent(self) -> float | None:
        """Candidate time relative to the incumbent's: below 1 is faster."""
        if self.incumbent_us is None or self.incumbent_us <= 0:
            return None
        return self.candidate_us / self.incumbent_us


class EvaluationReading(BaseModel):
    """What the tuning gates use of one evaluation."""

    model_config = ConfigDict(frozen=True)

    status: str
    reason: str = ""
    detector: str | None = None
    device: str = "cpu"
    workloads: tuple[WorkloadLatency, ...] = ()
    promoted: bool | None = None
    """The evaluator's promotion verdict; None when nothing was timed."""
    promotion_reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "PASSED"

    @property
    def timed(self) -> bool:
        return bool(self.workloads)

    def weighted_speedup(self) -> float | None:
        """Weighted mean baseline time over weighted mean candidate time."""
        if not self.workloads:
            return None
        total = sum(row.weight for row in self.workloads) or 1.0
        baseline = sum(row.weight * row.baseline_us for row in self.workloads) / total
        candidate = sum(row.weight * row.candidate_us for row in self.workloads) / total
        return baseline / candidate if candidate > 0 else None


def read_evaluation(result: Any) -> EvaluationReading:
    """An `EvaluationResult` (or its JSON form) as the gates see it."""
    data = result if isinstance(result, dict) else result.model_dump(mode="json")
    timing = data.get("timing") or {}
    promotion = timing.get("promotion") or {}
    against_baseline = ((promotion.get("against") or {}).get("baseline") or {}).get("workloads")
    rows = []
    for name, row in (timing.get("workloads") or {}).items():
        rows.append(_workload(name, row, (against_baseline or {}).get(name)))
    return EvaluationReading(
        status=data["status"],
        reason=data.get("reason") or "",
        detector=data.get("detector"),
        device=data.get("device", "cpu"),
        workloads=tuple(rows),
        promoted=promotion.get("promoted") if promotion else None,
        promotion_reason=promotion.get("reason", ""),
    )


def _workload(name: str, row: dict, interval: dict | None) -> WorkloadLatency:
    """One row; the speedup interval from the promotion's ratio interval against the baseline
    (candidate over baseline, so inverted) when the evaluator gives one, else the spread of
    the per-round speedups."""
    latency = WorkloadLatency(
        name=name,
        weight=float(row.get("weight", 1.0)),
        candidate_us=float(row["candidate_median_us"]),
        baseline_us=float(row["baseline_median_us"]),
        incumbent_us=row.get("incumbent_median_us"),
        floor_us=row.get("floor_us"),
    )
    if interval and interval.get("low") and interval.get("high"):
        low, high = 1 / interval["high"], 1 / interval["low"]
        return latency.model_copy(update={"speedup_low": low, "speedup_high": high})
    rounds = list(
        zip(
            row.get("baseline_round_medians_us") or [],
            row.get("candidate_round_medians_us") or [],
            strict=False,
        )
    )
    ratios = [baseline / candidate for baseline, candidate in rounds if candidate > 0]
    if not ratios:
        return latency
    return latency.model_copy(update={"speedup_low": min(ratios), "speedup_high": max(ratios)})
