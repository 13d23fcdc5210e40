"""When each evaluation ran and on which GPU, from the batch's own records.

A tune run evaluates candidates only in its `checking` state, and its journal stamps every
transition, so each `checking` interval is one evaluation window. The GPU is the one whose
device hold (`device-holds.jsonl`) covered that window. Two windows on one GPU that overlap
would mean two evaluations timed on one GPU at once; `overlapping_windows` finds them.
"""

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from controller.batch.devices import DeviceHold, read_holds
from controller.batch.runs import RUNS

EVALUATING_STATE = "checking"


class EvaluationWindow(BaseModel):
    """One attempt's gates (its evaluation) in one run, and the GPU held meanwhile."""

    model_config = ConfigDict(frozen=True)

    operator: str
    attempt: int
    start: float
    end: float | None
    gpu: str | None = None
    """None when no recorded hold covers the window (an evaluation outside any hold)."""


def evaluation_windows(batch: Path) -> list[EvaluationWindow]:
    holds = read_holds(batch)
    windows = []
    for journal in sorted((batch / RUNS).glob("*/tune-*/journal.jsonl")):
        operator = journal.parent.parent.name
        for attempt, start, end in _checking_intervals(journal):
            gpu = _covering_gpu(holds, operator, start, end)
            windows.append(
                EvaluationWindow(operator=operator, attempt=attempt, start=start, end=end, gpu=gpu)
            )
    return sorted(windows, key=lambda window: window.start)


def overlapping_windows(
    windows: list[EvaluationWindow],
) -> list[tuple[EvaluationWindow, EvaluationWindow]]:
    """Pairs of windows on one GPU that overlap in time (an unfinished one lasts forever)."""
    pairs = []
    for index, first in enumerate(windows):
        for second in windows[index + 1 :]:
            if first.gpu is None or first.gpu != second.gpu:
                continue
            first_end = first.end if first.end is not None else float("inf")
            second_end = second.end if second.end is not None else float("inf")
            if first.start < second_end and second.start < first_end:
                pairs.append((first, second))
    return pairs


def _checking_intervals(journal: Path) -> list[tuple[int, float, float | None]]:
    intervals, opened = [], None
    for line in journal.read_text().splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if event.get("kind") != "transition":
            continue
        if event.get("to") == EVALUATING_STATE:
            opened = (int(event.get("attempt", 0)), float(event["at"]))
        elif opened is not None and event.get("from") == EVALUATING_STATE:
            intervals.append((*opened, float(event["at"])))
            opened = None
    if opened is not None:
        intervals.append((*opened, None))
    return intervals


def _covering_gpu(
    holds: list[DeviceHold], operator: str, start: float, end: float | None
) -> str | None:
    for hold in holds:
        released = hold.released if hold.released is not None else float("inf")
        finish = end if end is not None else start
        if hold.operator == operator and hold.acquired <= start and finish <= released:
            return hold.gpu
    return None
