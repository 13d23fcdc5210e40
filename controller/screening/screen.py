"""The screen's loop: each point's sources written and imported afresh, its call checked
against the reference on one case per workload, then timed; every point's outcome is written
as a JSON line the moment it is known, so a screen cut short still says where it got.

Nothing here decides promotion: a point that screens well is only submitted, and the
controller's gates judge it like any other candidate.
"""

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import torch

from controller.screening.report import ScreenedPoint, weighted_time
from gates.evaluator.graph_timing import NotCapturable
from gates.evaluator.loading import SolutionImportError, forget, import_entry, write_sources
from gates.tasks.solution import Solution, SourceFile
from gates.tuning.launch_settings import Point, with_point
from operators.accuracy import AccuracyCheck
from operators.declaration import as_outputs

CHECK_SEED = 20261203


class DeviceLost(Exception):
    """The device context failed for good (a sticky CUDA error): later points need a fresh
    process."""


class ContractCheck:
    """One case per workload, drawn once with the reference's outputs computed once; a point
    must meet the contract on each and leave its inputs as they were."""

    def __init__(self, declaration, workloads, device) -> None:
        self.declaration = declaration
        self.cases = []
        for workload in workloads:
            inputs = declaration.make_input_sets(workload, 1, CHECK_SEED, "normal", device)[0]
            self.cases.append((workload.name, inputs, AccuracyCheck.on_inputs(declaration, inputs)))

    def first_problem(self, function) -> str | None:
        """The first broken promise, in words, or None."""
        declaration = self.declaration
        for name, inputs, check in self.cases:
            copies = [t.clone() for t in inputs]
            got = as_outputs(function(*copies, **declaration.params))
            for spec, original, copy in zip(declaration.inputs, inputs, copies, strict=True):
                if not torch.equal(original, copy):
                    return f"{name}: the call modified input {spec.name!r}"
            violation = check.violation(got)
            if violation is not None:
                return f"{name}: {violation.describe()}"
        return None


def load_point(solution: Solution, point: Point, scratch: Path, tag: str) -> Callable:
    """The solution with its entry file's `TUNING` set to `point`, imported as its own package."""
    entry = solution.spec.entry_file
    sources = [
        SourceFile(path=s.path, content=with_point(s.content, point)) if s.path == entry else s
        for s in solution.sources
    ]
    rewritten = solution.model_copy(update={"sources": sources})
    return import_entry(rewritten, write_sources(rewritten, scratch / tag), tag)


def forget_point(tag: str) -> None:
    """Drop a point's modules, so hundreds of points do not pile up in one process."""
    forget(tag)


def screen_points(
    solution: Solution,
    points: list[tuple[int, Point]],
    check: ContractCheck,
    timer,
    out: TextIO,
    deadline: float,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Screen `points` in order until `deadline` (a `clock` value); one JSON line per point
    to `out`. A point is not started unless one as long as the longest so far would end by
    the deadline: the agent's time ends where the gates' judging begins. `timer` is a
    `GraphTimer` (or a stand-in), None where nothing can be timed. Returns how many points
    were screened; raises DeviceLost after writing the point that broke the device context."""
    screened, longest = 0, 0.0
    with tempfile.TemporaryDirectory(prefix="screen-") as scratch:
        for index, point in points:
            started = clock()
            if started + longest >= deadline:
                break
            tag = f"screen_{index}"
            fields, lost = _screen_one(solution, point, check, timer, Path(scratch), tag)
            forget_point(tag)
            took = clock() - started
            longest = max(longest, took)
            record = ScreenedPoint(index=index, point=point, screen_s=round(took, 4), **fields)
            out.write(record.model_dump_json() + "\n")
            out.flush()
            screened += 1
            if lost:
                raise DeviceLost(record.reason)
    return screened


def _screen_one(solution, point, check, timer, scratch, tag) -> tuple[dict, bool]:
    try:
        function = load_point(solution, point, scratch, tag)
    except SolutionImportError as error:
        return {"status": "compile_error", "reason": str(error)[:300]}, False
    try:
        problem = check.first_problem(function)
        if problem is not None:
            return {"status": "contract_failed", "reason": problem[:300]}, False
        if timer is None:
            return {"status": "checked"}, False
        times = timer.time(function)
    except NotCapturable as error:
        return {"status": "runtime_error", "reason": f"not capturable: {error}"[:300]}, False
    except Exception as error:  # the point's own failure: the compiler's or the launch's
        return _failure(error), not _device_usable()
    rounded = {name: round(value, 4) for name, value in times.items()}
    weighted = round(weighted_time(times, timer.weights), 4)
    return {"status": "timed", "workload_us": rounded, "weighted_us": weighted}, False


def _failure(error: Exception) -> dict:
    """A compiler's refusal (Triton's errors, out of resources) or any other failure."""
    kind = type(error)
    lines = str(error).strip().splitlines()
    reason = f"{kind.__name__}: {lines[-1] if lines else ''}"[:300]
    compiled = kind.__module__.startswith("triton")
    return {"status": "compile_error" if compiled else "runtime_error", "reason": reason}


def _device_usable() -> bool:
    """False after a sticky CUDA error, which every later call in this process would repeat."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return True
    try:
        torch.cuda.synchronize()
    except Exception:
        return False
    return True
