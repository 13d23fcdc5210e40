"""The latency promotion rule, on paired ratios, judging the candidate as it would be installed.

An installed kernel applies only on the workloads it owns; elsewhere the call runs the
production kernel (the baseline). It owns a workload where it is faster than the baseline with
the interval's upper end under 1 on the workload's promotion figure, and slower beyond noise
(ratio interval entirely above 1 + the noise margin) than no role (the baseline, the
incumbent) on either figure, warm or cold. The model's time as installed is then compared with
every role's: against the baseline, an unowned workload's pairs count as exactly 1; against
the incumbent, whose own install could at best run the faster of itself and production, each
pair is the candidate's installed time over that best (an unowned workload the incumbent won
costs the candidate what the incumbent gained there). The candidate is promoted when that
model time is shorter than every role's by the required gain with the interval's upper end
under 1. The model's time weighs each workload by its calls per forward x the compared role's
time on the workload's promotion figure, so a gain on a short call cannot outvote a long one.
Thresholds live here only and are recorded in every verdict."""

from typing import NamedTuple

from gates.evaluator.paired_statistics import (
    model_time_ratio_interval,
    paired_ratios,
    ratio_interval,
)
from gates.evaluator.results import (
    Promotion,
    PromotionThresholds,
    RatioInterval,
    RoleComparison,
    SlowerRegime,
    WorkloadWeight,
)
from gates.evaluator.statistics import median

BASELINE = "baseline"
THRESHOLDS = PromotionThresholds(required_gain=0.03, noise_margin=0.01, confidence=0.95)
FIGURES = ("warm", "cold")


def _field(row, key: str, default=None):
    return row.get(key, default) if isinstance(row, dict) else getattr(row, key, default)


def role_pairs(row, role: str) -> list[float]:
    """A workload's paired ratios candidate/`role` on its promotion figure: per replay pair
    when timed in pairs, else per round (round medians, rounds interleaved)."""
    pairs = (_field(row, "paired_ratios") or {}).get(role)
    if pairs:
        return list(pairs)
    candidate = _field(row, "candidate_round_medians_us") or []
    other = _field(row, f"{role}_round_medians_us") or []
    return paired_ratios(list(candidate), list(other))


def figure_pairs(row, role: str) -> dict[str, list[float]]:
    """The paired ratios candidate/`role` on each figure that was timed in pairs."""
    figure = _field(row, "promotion_figure") or "warm"
    pairs = {figure: role_pairs(row, role)}
    other = (_field(row, "other_figure_ratios") or {}).get(role)
    if other:
        pairs["cold" if figure == "warm" else "warm"] = list(other)
    return {name: ratios for name, ratios in pairs.items() if ratios}


def figure_time_us(row, role: str, figure: str) -> float | None:
    """A role's per-call median on one figure (the warm one is `<role>_median_us`)."""
    if figure == "cold" and _field(row, f"{role}_cold_us") is not None:
        return _field(row, f"{role}_cold_us")
    if figure == "warm" or _field(row, "method") == "eager":
        return _field(row, f"{role}_median_us")
    return None


def _round_median(row, role: str) -> float:
    """A role's time where the row has no median on the figure: its round medians' median."""
    rounds = sorted(_field(row, f"{role}_round_medians_us") or [1.0])
    return rounds[len(rounds) // 2]


def row_weights(workloads) -> dict[str, WorkloadWeight]:
    """Weights from the timing rows themselves (the declared or captured relative weight),
    for a verdict made without the task's calls per forward."""
    return {
        name: WorkloadWeight(calls_per_forward=_field(row, "weight", 1.0), source="declared-weight")
        for name, row in workloads.items()
    }


def promotion_verdict(
    report, roles: list[str], thresholds=THRESHOLDS, weights: dict | None = None
) -> Promotion:
    """Whether the candidate, applied only on the workloads it owns, beats every other role by
    the rule, with the numbers and why. `weights` (calls per forward by workload) default to
    the rows' own weights."""
    workloads = report["workloads"] if isinstance(report, dict) else report.workloads
    weights = {**row_weights(workloads), **(weights or {})}
    others = [role for role in roles if role != "candidate"]
    sides = {other: _workloads_against(workloads, other, thresholds) for other in others}
    baseline = sides.get(BASELINE)
    owns = owned_workloads(
        {name: interval.high for name, interval in baseline.intervals.items()} if baseline else {},
        {item.workload for side in sides.values() for item in side.slower},
        list(workloads),
    )
    comparisons, reasons = {}, []
    for other in others:
        comparison = _compare(workloads, other, weights, thresholds, sides[other], owns)
        comparisons[other] = comparison
        ratio, high = comparison.weighted.ratio, comparison.weighted.high
        if not ratio <= 1 - thresholds.required_gain:
            gain = thresholds.required_gain
            reasons.append(
                f"model-time ratio to {other} {ratio:.4f} is not {gain:.0%} under 1"
                f"{_owning(owns, workloads)}"
            )
            reasons += [slower.describe(other) for slower in comparison.slower]
        elif not high < 1:
            reasons.append(
                f"the interval of the model-time ratio to {other} reaches {high:.4f} (not under 1)"
            )
    promoted = not reasons
    declined = [name for name in workloads if name not in owns]
    reason = (
        f"model-time ratio at least {thresholds.required_gain:.0%} under 1 against every role, "
        "interval under 1, applied only where faster than production and slower beyond noise "
        "than no role on either figure"
        + (f"; declines {', '.join(declined)} (production runs there)" if declined else "")
        if promoted
        else "; ".join(reasons)
    )
    return Promotion(
        promoted=promoted,
        reason=reason,
        thresholds=thresholds,
        against=comparisons,
        weights={name: weights[name] for name in workloads},
        owns=owns,
    )


def owned_workloads(highs: dict[str, float], worse: set[str], names: list[str]) -> list[str]:
    """The workloads the candidate would own: faster than the baseline on the promotion figure
    (`highs`, each interval's upper end against the baseline, under 1), and slower beyond
    noise against no role on either figure (`worse`)."""
    return [name for name in names if 0 < highs.get(name, 0) < 1 and name not in worse]


def installed_ratios(row, other: str, owned: bool) -> list[float]:
    """The pairs of a workload's time with the candidate as installed over `other`'s best:
    the candidate where owned, else production; against the incumbent, over the faster of the
    incumbent and production in each replay (both sampled the same replays)."""
    ratios = role_pairs(row, other)
    if other == BASELINE:
        return ratios if owned else [1.0] * len(ratios)
    base = role_pairs(row, BASELINE)
    if not base or not ratios:
        return ratios if owned else [1.0] * len(ratios)
    if len(base) != len(ratios):  # not replay-aligned: each role's median pair stands in
        ratios, base = [median(ratios)] * len(ratios), [median(base)] * len(ratios)
    if owned:  # candidate / min(incumbent, production)
        return [max(to_other, to_base) for to_other, to_base in zip(ratios, base, strict=True)]
    return [max(to_other / to_base, 1.0) for to_other, to_base in zip(ratios, base, strict=True)]


def _owning(owns: list[str], workloads) -> str:
    """Where the candidate as installed runs, and that production runs on the rest: a ratio
    far above 1 often means a declined workload, not a slow kernel."""
    if len(owns) == len(workloads):
        return ""
    return f" (applied only where it owns: {', '.join(owns) or 'nowhere'}; production elsewhere)"


class _Workloads(NamedTuple):
    """The candidate against one role, workload by workload: each promotion-figure interval,
    each figure's, and the regimes slower beyond noise."""

    intervals: dict[str, RatioInterval]
    figures: dict[str, dict[str, RatioInterval]]
    slower: list[SlowerRegime]


def _workloads_against(workloads, other: str, thresholds) -> _Workloads:
    intervals, figures, slower = {}, {}, []
    for name, row in workloads.items():
        figures[name] = {}
        for timed, ratios in figure_pairs(row, other).items():
            estimate, low, high = ratio_interval(ratios, thresholds.confidence)
            interval = RatioInterval(ratio=estimate, low=low, high=high, pairs=len(ratios))
            figures[name][timed] = interval
            if low > 1 + thresholds.noise_margin:
                slower.append(
                    SlowerRegime(
                        workload=name,
                        figure=timed,
                        candidate_us=figure_time_us(row, "candidate", timed),
                        role_us=figure_time_us(row, other, timed),
                        interval=interval,
                    )
                )
        ratios = role_pairs(row, other)
        estimate, low, high = ratio_interval(ratios, thresholds.confidence)
        intervals[name] = RatioInterval(ratio=estimate, low=low, high=high, pairs=len(ratios))
    return _Workloads(intervals, figures, slower)


def _compare(
    workloads, other: str, weights: dict, thresholds, side: _Workloads, owns: list[str]
) -> RoleComparison:
    """The candidate against `other`: its workloads (`side`), and the model time with the
    candidate applied on `owns` as installed (`installed_ratios`)."""
    weighted = []
    for name, row in workloads.items():
        figure = _field(row, "promotion_figure") or "warm"
        role_time = figure_time_us(row, other, figure) or _round_median(row, other)
        ratios = installed_ratios(row, other, name in owns)
        weighted.append((weights[name].calls_per_forward * role_time, ratios))
    ratio, low, high = model_time_ratio_interval(weighted, thresholds.confidence)
    total = sum(weight for weight, ratios in weighted if ratios) or 1.0
    return RoleComparison(
        weighted=RatioInterval(
            ratio=ratio, low=low, high=high, pairs=sum(len(r) for _, r in weighted)
        ),
        workloads=side.intervals,
        figures=side.figures,
        model_time_share={
            name: weight / total for name, (weight, _) in zip(workloads, weighted, strict=True)
        },
        worse=sorted({item.workload for item in side.slower}),
        slower=side.slower,
    )
