"""The autotune agent's search plan: which launch-settings points to try next, from the space
the kernel declares and what earlier attempts of the run found. Pure, so it is easy to test.

Points are the incumbent with one setting changed, then two, in the space's declared order;
a point already tried is skipped, and a setting value that was part of a point failing to
compile or breaking the contract is pruned unless some passing point used it.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict

from gates.tuning.launch_settings import DeclaredSettings, Point

BROKEN = frozenset(
    {"COMPILE_ERROR", "RUNTIME_ERROR", "INCORRECT_SHAPE", "INCORRECT_DTYPE", "INCORRECT_NUMERICAL"}
)
"""Evaluator statuses that condemn a point's settings (a detector's finding does not)."""


class SearchPlan(BaseModel):
    """The points to try in this attempt, and why others were left out."""

    model_config = ConfigDict(frozen=True)

    incumbent: Point
    points: list[Point]
    tried: int
    pruned: list[str]
    remaining: int


def plan_points(
    settings: DeclaredSettings, history: list[dict[str, Any]], count: int
) -> SearchPlan:
    """Up to `count` untried, unpruned points near the incumbent."""
    incumbent = dict(settings.point or {})
    tried = [entry["tuning"] for entry in history if entry.get("tuning")]
    seen = {_key(point) for point in tried} | {_key(incumbent)}
    passing = [
        entry["tuning"] for entry in history if entry.get("tuning") and _reached_latency(entry)
    ]
    vouched = {
        (name, repr(value)) for point in passing + [incumbent] for name, value in point.items()
    }
    pruned = set()
    for entry in history:
        if entry.get("tuning") and entry.get("status") in BROKEN:
            for name, value in entry["tuning"].items():
                if (name, repr(value)) not in vouched:
                    pruned.add((name, repr(value)))
    candidates = []
    for reach in (1, 2):
        for point in settings.neighbours(incumbent, reach):
            if _key(point) in seen:
                continue
            if any((name, repr(value)) in pruned for name, value in point.items()):
                continue
            seen.add(_key(point))
            candidates.append(point)
    return SearchPlan(
        incumbent=incumbent,
        points=candidates[:count],
        tried=len(tried),
        pruned=sorted(f"{name}={value}" for name, value in pruned),
        remaining=max(0, len(candidates) - count),
    )


def _reached_latency(entry: dict[str, Any]) -> bool:
    """The point passed correctness: it was promoted or only the latency gate rejected it."""
    return entry.get("outcome") == "promoted" or entry.get("gate") == "latency"


def _key(point: Point) -> tuple:
    return tuple(sorted((name, repr(value)) for name, value in point.items()))
