"""Which point the autotune agent submits next, from its screen of the whole declared space and
what earlier attempts of the run submitted. Pure, so it is easy to test.

The screen's best-ranked points go to the full evaluator in order, one per attempt, at most
`few` per run; the incumbent and points already submitted are skipped. Where the screen timed
the points, one that screened no faster than the incumbent is not worth an evaluation (the
latency gate needs a 3% gain), so the agent stops there. A CUDA screen that timed no point
(its budget spent compiling) submits nothing: a guess judged in full takes the step past its
minutes (2026-12-07, H100: a 17.2 s screen of the modulations' space timed none, and its
blind point was judged and refused). Only the interpreter's screen, which never times, falls
back to the nearest untried point when it reached none.

A point kept per regime (a tile per row count) is screened one regime's change at a time, and
each regime runs on its own workloads, so one change may gain too little of the model's time to
clear the gate. Where the screen found faster changes in two or more regimes, their join goes
first: each regime's fastest screened settings in one point, every part of which was compiled,
checked and timed on the workloads it runs.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict

from controller.screening.report import ScreenReport, point_key
from gates.tuning.launch_settings import Point, per_regime


class Submission(BaseModel):
    """The point to submit in this attempt (None: nothing left worth submitting) and why."""

    model_config = ConfigDict(frozen=True)

    point: Point | None
    rank: int | None = None
    """Its place among the screen's passing points (1: the fastest)."""
    weighted_us: float | None = None
    submitted_before: int
    reason: str


def next_submission(
    report: ScreenReport, incumbent: Point, history: list[dict[str, Any]], few: int
) -> Submission:
    """The best-ranked screened point not yet submitted, unless `few` were already."""
    start = point_key(report.points[0].point) if report.points else None
    submitted = {point_key(entry["tuning"]) for entry in history if entry.get("tuning")} - {start}
    done = len(submitted)
    if done >= few:
        return Submission(
            point=None,
            submitted_before=done,
            reason=f"the screen's best {few} points were submitted already",
        )
    current = point_key(incumbent)
    own = next((p for p in report.points if point_key(p.point) == current), None)
    ceiling = own.weighted_us if report.timed and own is not None else None
    joined = joined_regimes(report, incumbent, ceiling, done)
    if joined is not None and point_key(joined.point) not in submitted | {current}:
        return joined
    for rank, screened in enumerate(report.ranked(), start=1):
        key = point_key(screened.point)
        if key == current or key in submitted:
            continue
        if ceiling is not None and screened.weighted_us >= ceiling:
            return Submission(
                point=None,
                submitted_before=done,
                reason=f"no point left that screened faster than the incumbent "
                f"({ceiling:.3f} us weighted)",
            )
        timed = f", {screened.weighted_us:.3f} us weighted" if screened.weighted_us else ""
        return Submission(
            point=screened.point,
            rank=rank,
            weighted_us=screened.weighted_us,
            submitted_before=done,
            reason=f"rank {rank} of {len(report.ranked())} passing points{timed}",
        )
    if report.timed and not any(p.weighted_us is not None for p in report.points):
        return Submission(
            point=None,
            submitted_before=done,
            reason=f"the screen timed no point in its {report.seconds:.1f} s; a point submitted "
            "unscreened would spend the attempt's judging on a guess",
        )
    if report.points and all(p.status == "not_screened" for p in report.points[1:]):
        for screened in report.points[1:]:
            if point_key(screened.point) not in submitted | {current}:
                return Submission(
                    point=screened.point,
                    submitted_before=done,
                    reason="the screen reached no point; the nearest untried point unscreened",
                )
    return Submission(
        point=None, submitted_before=done, reason="every passing point was submitted already"
    )


def joined_regimes(
    report: ScreenReport, incumbent: Point, ceiling: float | None, done: int
) -> Submission | None:
    """Each regime's fastest screened change joined into one point, where two or more regimes
    have one faster than the incumbent (`ceiling`, its screened weighted time); else None.
    `done`: how many points the run submitted before."""
    if ceiling is None or not per_regime(incumbent):
        return None
    regimes = list(incumbent)
    fastest: dict[str, Any] = {}
    for screened in report.ranked():
        changed = [r for r in regimes if screened.point.get(r) != incumbent[r]]
        if len(changed) != 1 or screened.weighted_us is None or screened.weighted_us >= ceiling:
            continue
        regime = changed[0]
        if regime not in fastest or screened.weighted_us < fastest[regime].weighted_us:
            fastest[regime] = screened
    if len(fastest) < 2:
        return None
    point = {r: fastest[r].point[r] if r in fastest else incumbent[r] for r in regimes}
    estimate = ceiling - sum(ceiling - fastest[r].weighted_us for r in fastest)
    names = ", ".join(sorted(fastest))
    return Submission(
        point=point,
        weighted_us=estimate,
        submitted_before=done,
        reason=f"each regime's fastest screened change joined ({names}): about "
        f"{estimate:.3f} us weighted against the incumbent's {ceiling:.3f}",
    )
