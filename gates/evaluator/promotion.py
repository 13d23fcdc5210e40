"""The latency promotion rule, on paired ratios: a candidate replaces the baseline (and the
incumbent) when its weighted mean time ratio is better by the required gain with the
interval's upper end under 1 (clear of no improvement), and no workload is slower beyond
noise (its ratio interval entirely above 1 + the noise margin). Thresholds live here only and
are recorded in every verdict."""

from gates.evaluator.paired_statistics import (
    paired_ratios,
    ratio_interval,
    weighted_ratio_interval,
)
from gates.evaluator.results import (
    Promotion,
    PromotionThresholds,
    RatioInterval,
    RoleComparison,
)

THRESHOLDS = PromotionThresholds(required_gain=0.03, noise_margin=0.01, confidence=0.95)


def role_pairs(row, role: str) -> list[float]:
    """A workload's paired ratios candidate/`role`: per replay pair when timed in pairs,
    else per round (round medians, rounds interleaved)."""
    get = row.get if isinstance(row, dict) else lambda key, default=None: getattr(row, key, default)
    pairs = (get("paired_ratios") or {}).get(role)
    if pairs:
        return list(pairs)
    candidate = get("candidate_round_medians_us") or []
    other = get(f"{role}_round_medians_us") or []
    return paired_ratios(list(candidate), list(other))


def promotion_verdict(report, roles: list[str], thresholds=THRESHOLDS) -> Promotion:
    """Whether the candidate beats every other role by the rule, with the numbers and why."""
    workloads = report["workloads"] if isinstance(report, dict) else report.workloads
    comparisons, reasons = {}, []
    for other in (role for role in roles if role != "candidate"):
        per_workload, worse = {}, []
        weighted = []
        for name, row in workloads.items():
            weight = row["weight"] if isinstance(row, dict) else row.weight
            ratios = role_pairs(row, other)
            estimate, low, high = ratio_interval(ratios, thresholds.confidence)
            per_workload[name] = RatioInterval(
                ratio=estimate, low=low, high=high, pairs=len(ratios)
            )
            weighted.append((weight, ratios))
            if low > 1 + thresholds.noise_margin:
                worse.append(name)
        ratio, low, high = weighted_ratio_interval(weighted, thresholds.confidence)
        mean = RatioInterval(
            ratio=ratio, low=low, high=high, pairs=sum(len(r) for _, r in weighted)
        )
        comparisons[other] = RoleComparison(weighted=mean, workloads=per_workload, worse=worse)
        if not ratio <= 1 - thresholds.required_gain:
            gain = thresholds.required_gain
            reasons.append(f"weighted ratio to {other} {ratio:.4f} is not {gain:.0%} under 1")
        elif not high < 1:
            reasons.append(f"the interval of the ratio to {other} reaches {high:.4f} (not under 1)")
        if worse:
            reasons.append(f"{', '.join(worse)} slower than {other} beyond noise")
    promoted = not reasons
    reason = (
        f"weighted ratio at least {thresholds.required_gain:.0%} under 1 against every role, "
        "interval under 1, no workload slower beyond noise"
        if promoted
        else "; ".join(reasons)
    )
    return Promotion(promoted=promoted, reason=reason, thresholds=thresholds, against=comparisons)
