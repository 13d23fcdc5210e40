"""The latency promotion rule: a candidate replaces the baseline (and incumbent) only if its
weighted mean is at least 3% better in every round and no workload is more than 5% worse."""

REQUIRED_GAIN = 0.03
TOLERATED_LOSS = 0.05


def weighted_means(report: dict, role: str) -> list[float]:
    """Per round, the weight-averaged median latency of `role` over the workloads."""
    rows = list(report["workloads"].values())
    total = sum(row["weight"] for row in rows)
    rounds = len(rows[0][f"{role}_round_medians_us"])
    return [
        sum(row["weight"] * row[f"{role}_round_medians_us"][r] for row in rows) / total
        for r in range(rounds)
    ]


def promotion_verdict(report: dict, roles: list[str]) -> dict:
    """Whether the candidate beats every other role by the rule; the reason in words."""
    candidate = weighted_means(report, "candidate")
    for other in (role for role in roles if role != "candidate"):
        reference = weighted_means(report, other)
        for index, (ours, theirs) in enumerate(zip(candidate, reference, strict=True)):
            if ours > theirs * (1 - REQUIRED_GAIN):
                return {
                    "promoted": False,
                    "reason": f"round {index}: {ours:.2f} us is not 3% under {other} {theirs:.2f}",
                }
        for name, row in report["workloads"].items():
            if row["candidate_median_us"] > row[f"{other}_median_us"] * (1 + TOLERATED_LOSS):
                return {"promoted": False, "reason": f"{name} is more than 5% slower than {other}"}
    return {"promoted": True, "reason": "at least 3% faster in every round, no workload 5% worse"}
