"""The per-round medians of an evaluation's timing, which the page draws as intervals.

`gates.tuning.reading` copies the figures the gates decide on; the rounds behind each median
are only shown to reviewers, so they are read here, from the same JSON, and nowhere else."""

from typing import Any

from controller.review_page.page_model import RoleLatency, WorkloadLatencies

ROLES = ("baseline", "incumbent", "candidate")


def round_medians(evaluation: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """Per workload, per timed role, each round's median (us); {} when nothing was timed."""
    workloads = (evaluation.get("timing") or {}).get("workloads") or {}
    rounds: dict[str, dict[str, list[float]]] = {}
    for name, row in workloads.items():
        for role in ROLES:
            values = [float(v) for v in row.get(f"{role}_round_medians_us") or []]
            median = row.get(f"{role}_median_us")
            if not values and median is not None:
                values = [float(median)]
            if values:
                rounds.setdefault(name, {})[role] = values
    return rounds


def workload_latencies(evaluation: dict[str, Any]) -> list[WorkloadLatencies]:
    """Each workload's roles as median and the range of round medians."""
    workloads = (evaluation.get("timing") or {}).get("workloads") or {}
    found = []
    for name, roles in round_medians(evaluation).items():
        row = workloads[name]
        found.append(
            WorkloadLatencies(
                workload=name,
                roles=[
                    RoleLatency(
                        role=role,
                        median_us=float(row.get(f"{role}_median_us") or _middle(values)),
                        low_us=min(values),
                        high_us=max(values),
                    )
                    for role, values in roles.items()
                ],
            )
        )
    return found


def _middle(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]
