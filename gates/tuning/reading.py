"""The one place that reads the evaluator's result, so a change to its shape is a local fix.

Everything the tune flow and its gates need from an evaluation (status, findings, per-workload
latencies warm and cold for every role, the calls per forward that weigh them, the promotion
verdict and the regimes it found slower) is copied into typed models here; nothing else looks
inside `EvaluationResult.timing`.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict

from gates.evaluator.results import SlowerRegime


class WorkloadLatency(BaseModel):
    """One workload's per-call medians (microseconds) for each timed role, warm and cold;
    `*_us` is the figure promotion used for this workload."""

    model_config = ConfigDict(frozen=True)

    name: str
    weight: float = 1.0
    calls_per_forward: float | None = None
    """Calls per forward that weigh this workload in the model's time (None: `weight`)."""
    weight_source: str | None = None
    """captured, declared or declared-weight."""
    promotion_figure: str = "warm"
    figure_source: str | None = None
    candidate_us: float
    baseline_us: float
    incumbent_us: float | None = None
    candidate_warm_us: float | None = None
    candidate_cold_us: float | None = None
    baseline_warm_us: float | None = None
    baseline_cold_us: float | None = None
    incumbent_warm_us: float | None = None
    incumbent_cold_us: float | None = None
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

    @property
    def model_calls(self) -> float:
        """The calls this workload counts for in the model's time."""
        return self.weight if self.calls_per_forward is None else self.calls_per_forward


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
    slower: tuple[str, ...] = ()
    """Each workload and figure slower than a role beyond noise, described."""
    owns: tuple[str, ...] | None = None
    """The workloads an install would apply the candidate on (None: a verdict that did not
    record them, every workload counts)."""

    @property
    def passed(self) -> bool:
        return self.status == "PASSED"

    @property
    def timed(self) -> bool:
        return bool(self.workloads)

    def weighted_speedup(self) -> float | None:
        """The model's time with the baseline over its time with the candidate as installed:
        each workload's calls per forward x its time on its promotion figure, summed, the
        baseline's (production's) time where the candidate would not own the workload."""
        if not self.workloads:
            return None
        baseline = sum(row.model_calls * row.baseline_us for row in self.workloads)
        candidate = sum(
            row.model_calls * (row.candidate_us if self.applies_on(row.name) else row.baseline_us)
            for row in self.workloads
        )
        return baseline / candidate if candidate > 0 else None

    def applies_on(self, workload: str) -> bool:
        return self.owns is None or workload in self.owns

    @property
    def declined(self) -> tuple[str, ...]:
        """The timed workloads the candidate would not own."""
        return tuple(row.name for row in self.workloads if not self.applies_on(row.name))

    def weights_source(self) -> str:
        """Where the weights came from: captured, declared, declared-weight (or a mix)."""
        sources = sorted({row.weight_source or "declared-weight" for row in self.workloads})
        return "+".join(sources) or "none"


def read_evaluation(result: Any) -> EvaluationReading:
    """An `EvaluationResult` (or its JSON form) as the gates see it."""
    data = result if isinstance(result, dict) else result.model_dump(mode="json")
    timing = data.get("timing") or {}
    promotion = timing.get("promotion") or {}
    against = promotion.get("against") or {}
    against_baseline = (against.get("baseline") or {}).get("workloads")
    weights = promotion.get("weights") or {}
    rows = []
    for name, row in (timing.get("workloads") or {}).items():
        rows.append(_workload(name, row, (against_baseline or {}).get(name), weights.get(name)))
    slower = tuple(
        _slower_line(item, role)
        for role, comparison in against.items()
        for item in comparison.get("slower") or ()
    )
    return EvaluationReading(
        status=data["status"],
        reason=data.get("reason") or "",
        detector=data.get("detector"),
        device=data.get("device", "cpu"),
        workloads=tuple(rows),
        promoted=promotion.get("promoted") if promotion else None,
        promotion_reason=promotion.get("reason", ""),
        slower=slower,
        owns=None if promotion.get("owns") is None else tuple(promotion["owns"]),
    )


def _slower_line(item: dict, role: str) -> str:
    return SlowerRegime.model_validate(item).describe(role)


def _figures(row: dict, role: str) -> dict[str, float | None]:
    """A role's warm and cold medians (an eager row has one figure, its median)."""
    warm = row.get(f"{role}_median_us")
    cold = row.get(f"{role}_cold_us")
    return {"warm": None if warm is None else float(warm), "cold": cold}


def _workload(name: str, row: dict, interval: dict | None, weight: dict | None) -> WorkloadLatency:
    """One row; the speedup interval from the promotion's ratio interval against the baseline
    (candidate over baseline, so inverted) when the evaluator gives one, else the spread of
    the per-round speedups."""
    figure = row.get("promotion_figure") or "warm"
    times = {role: _figures(row, role) for role in ("candidate", "baseline", "incumbent")}

    def promoted(role: str) -> float | None:
        chosen = times[role][figure]
        return chosen if chosen is not None else times[role]["warm"]

    latency = WorkloadLatency(
        name=name,
        weight=float(row.get("weight", 1.0)),
        calls_per_forward=(weight or {}).get("calls_per_forward"),
        weight_source=(weight or {}).get("source"),
        promotion_figure=figure,
        figure_source=row.get("figure_source"),
        candidate_us=float(promoted("candidate")),
        baseline_us=float(promoted("baseline")),
        incumbent_us=promoted("incumbent"),
        **{
            f"{role}_{regime}_us": value
            for role, figures in times.items()
            for regime, value in figures.items()
        },
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
