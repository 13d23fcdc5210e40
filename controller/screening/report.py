"""What a screen found, point by point, and the order the agent reads it in.

The models cross the fence boundary as JSON lines (one `ScreenedPoint` per line, written as
each point ends), so a screen cut short by its time budget or a lost device context still
reports every point it reached.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gates.tuning.launch_settings import DeclaredSettings, Point

ScreenStatus = Literal[
    "timed", "checked", "compile_error", "runtime_error", "contract_failed", "not_screened"
]
PASSING: frozenset[str] = frozenset({"timed", "checked"})


class ScreenedPoint(BaseModel):
    """One point of the space: what happened to it, how long its screen took, its times."""

    model_config = ConfigDict(frozen=True)

    index: int
    """Its place in the screen's order (0 is the incumbent's point)."""
    point: Point
    status: ScreenStatus
    reason: str = ""
    """Why a point was dropped (the compiler's or the contract's first line), else empty."""
    screen_s: float = 0.0
    """Wall seconds this point took: import, compile, check and timing."""
    workload_us: dict[str, float] = Field(default_factory=dict)
    """Per-call microseconds per workload, on each workload's promotion figure."""
    weighted_us: float | None = None
    """The model's time per forward: workload times weighted by calls (None: not timed)."""

    @property
    def passed(self) -> bool:
        return self.status in PASSING


class ScreenReport(BaseModel):
    """A whole screen: every point of the space, in screen order, and how it was timed."""

    model_config = ConfigDict(frozen=True)

    device: str
    timed: bool
    """False on the CPU: the interpreter has no timing, so only the contract was checked."""
    note: str = ""
    figures: dict[str, str] = Field(default_factory=dict)
    """Per workload, the figure timed (warm or cold), as the evaluator would promote on."""
    seconds: float = 0.0
    points: list[ScreenedPoint]

    def ranked(self) -> list[ScreenedPoint]:
        """Passing points, fastest first when timed, else in screen order (nearest first)."""
        passing = [p for p in self.points if p.passed]
        if not self.timed:
            return passing
        timed = [p for p in passing if p.weighted_us is not None]
        return sorted(timed, key=lambda p: (p.weighted_us, p.index))

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for point in self.points:
            found[point.status] = found.get(point.status, 0) + 1
        return found


POINT_LIMIT = 4096
"""The most points a screen lists. A space with settings per regime multiplies out past any
budget (four regimes of seven settings: about 10^13 points); past this many, the points
nearest the incumbent are the ones screened."""


def space_points(settings: DeclaredSettings, limit: int = POINT_LIMIT) -> list[Point]:
    """Every point of the declared space up to `limit`, the incumbent's first, then nearest
    steps first (the order `DeclaredSettings.neighbours` gives, one changed setting, then
    two, ...)."""
    incumbent = dict(settings.point or {})
    found = [incumbent]
    for reach in range(1, len(settings.varied(incumbent)) + 1):
        if len(found) >= limit:
            break
        found.extend(settings.neighbours(incumbent, reach))
    return found[:limit]


def weighted_time(workload_us: dict[str, float], weights: dict[str, float]) -> float:
    """The model's time per forward from per-call times: each workload times its calls."""
    return sum(weights.get(name, 1.0) * value for name, value in workload_us.items())


def point_key(point: dict[str, Any]) -> tuple:
    """A hashable identity of a point, independent of its settings' order."""
    return tuple(sorted((name, repr(value)) for name, value in point.items()))
