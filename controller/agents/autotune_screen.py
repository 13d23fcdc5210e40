"""The autotune agent's screen, run inside the session's fence: every point of the declared
space handed to `controller.screening.worker`, restarted past a point that broke the device
context, and read back as one `ScreenReport` that names every point (those the budget did not
reach as `not_screened`)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from controller.agents.base import AgentSession
from controller.agents.tools import interpreter_paths, updated_policy
from controller.screening.report import ScreenedPoint, ScreenReport
from gates.tuning.launch_settings import Point

SCREEN_FOLDER = ".autotune"
SOURCE_ROOT = Path(__file__).resolve().parents[2]
EXIT_DEVICE_LOST = 4
MAX_RESTARTS = 3
MAX_JOBS = 14
SCREEN_POINTS_PER_S = 1.3
"""Points a CUDA screen reaches a second, compiled ahead in its children and then timed: 1.3
for split_kv_attention's space (353 points in 271 s) and 1.2 for rms_norm's (20 in 17.3 s) on
the H200. A screen hands its worker no more than its budget reaches at the faster rate,
nearest first, so a long screen reaches what it did before, and a short one times something:
an H100 screen that compiled ahead all 240 points of a space in 60% of a 35 s budget left its
timing process no time to time one (2026-12-07)."""


def screenable(budget_s: float, jobs: int) -> int:
    """How many points a CUDA screen of `budget_s` hands its worker (at least one per job)."""
    return max(jobs, int(budget_s * SCREEN_POINTS_PER_S))


def default_jobs() -> int:
    """Compiling children of a screen: every core but two (the timing process and the
    controller), at most MAX_JOBS; compiling is most of a point's cost."""
    return min(MAX_JOBS, max(1, (os.cpu_count() or 2) - 2))


def screen_in_fence(
    session: AgentSession, points: list[Point], budget_s: float, jobs: int | None = None
) -> ScreenReport:
    """Screen `points` (the incumbent's first, nearest next) with the task and solution in the
    workspace; on CUDA only as many as `screenable` says the budget reaches."""
    started = time.monotonic()
    device = "cuda" if getattr(session.policy, "gpu", False) else "cpu"
    jobs = jobs or default_jobs()
    scratch = session.workspace / SCREEN_FOLDER
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    out = scratch / "screened.jsonl"
    out.touch()
    notes: list[str] = []
    figures: dict[str, str] = {}
    reachable = len(points) if device == "cpu" else screenable(budget_s, jobs)
    try:
        remaining = list(enumerate(points))[:reachable]
        for _ in range(MAX_RESTARTS + 1):
            left = budget_s - (time.monotonic() - started)
            if not remaining or left <= 1:
                break
            listed = scratch / "points.json"
            listed.write_text(json.dumps(remaining))
            result = _run_worker(session, device, listed, out, left, jobs)
            figures.update(_figures(result.stderr))
            reached = {record.index for record in _read(out)}
            remaining = [(index, point) for index, point in remaining if index not in reached]
            if result.returncode == EXIT_DEVICE_LOST:
                notes.append("the device context failed at one point; the screen went on past it")
                continue
            if result.returncode != 0:
                notes.append(
                    f"the screen worker ended with exit code {result.returncode}: "
                    f"{_text(result.stderr).strip()[-300:]}"
                )
            break
        records = {record.index: record for record in _read(out)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    missing = f"not reached within the screen's budget of {budget_s:.0f} s"
    beyond = (
        f"beyond the {reachable} nearest points a {budget_s:.0f} s screen reaches "
        f"(about {SCREEN_POINTS_PER_S:g} a second)"
    )
    every = [
        records.get(index)
        or ScreenedPoint(
            index=index,
            point=point,
            status="not_screened",
            reason=missing if index < reachable else beyond,
        )
        for index, point in enumerate(points)
    ]
    timed = device == "cuda"
    if not timed:
        notes.append(
            "no timing: the Triton interpreter runs on the CPU, so only the contract "
            "was checked and points are ranked nearest first"
        )
    return ScreenReport(
        device=device,
        timed=timed,
        note="; ".join(notes),
        figures=figures,
        seconds=round(time.monotonic() - started, 3),
        points=every,
    )


def _run_worker(session: AgentSession, device: str, listed: Path, out: Path, left: float, jobs):
    """One run of the worker in the fence, with this interpreter and its import path."""
    _, readable = interpreter_paths()
    search_path = [Path(p) for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    extra = (*readable, Path(sys.prefix), SOURCE_ROOT, *search_path)
    environment = dict(session.policy.env_values)
    if search_path:
        environment["PYTHONPATH"] = os.pathsep.join(str(p) for p in search_path)
    policy = updated_policy(
        session.policy,
        readable=tuple(session.policy.readable) + tuple(p for p in extra if p.exists()),
        env_values=environment,
        timeout_s=left + 30,
    )
    workspace = session.workspace.resolve()
    argv = [sys.executable, "-m", "controller.screening.worker", "task", "solution"]
    argv += [
        str(listed.resolve().relative_to(workspace)),
        str(out.resolve().relative_to(workspace)),
    ]
    argv += ["--device", device, "--budget-s", f"{left:.1f}", "--jobs", str(jobs)]
    return session.fence.run(argv, policy, cwd=workspace)


def _read(out: Path) -> list[ScreenedPoint]:
    records = []
    for line in out.read_text().splitlines():
        try:
            records.append(ScreenedPoint.model_validate_json(line))
        except ValueError:
            continue  # a line cut short when the worker was killed
    return records


def _figures(stderr) -> dict[str, str]:
    for line in _text(stderr).splitlines():
        if line.startswith('{"figures"'):
            try:
                return dict(json.loads(line)["figures"])
            except (ValueError, KeyError, TypeError):
                return {}
    return {}


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
