"""The `autotune` agent: no model and no key; it searches the launch settings a kernel declares
(`TUNING_SPACE` beside `TUNING` in the solution's entry file) and writes one point per attempt
as the candidate, which the controller's gates judge like any other.

With `autotune:<points>` above 1 it first screens that many points with `controller evaluate`
inside the fence (compile, contract, and on a GPU the time against the baseline), prunes the
ones that fail, and submits the fastest. Every step is written to the transcript.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from controller.agents.autotune_search import SearchPlan, plan_points
from controller.agents.base import AgentSession, SessionResult, TraceEvent, Usage
from controller.agents.tools import FencedTools, interpreter_paths, updated_policy
from controller.errors import ControllerError
from gates.tuning.launch_settings import Point, declared_settings, with_point

SCREEN_FOLDER = ".autotune"
SOURCE_ROOT = Path(__file__).resolve().parents[2]


class AutotuneAgent:
    """Searches the declared launch-settings space, budgeted by points per attempt."""

    def __init__(self, points_per_attempt: int = 1) -> None:
        self.points_per_attempt = points_per_attempt
        self.spec = "autotune" if points_per_attempt == 1 else f"autotune:{points_per_attempt}"

    @classmethod
    def from_argument(cls, argument: str) -> AutotuneAgent:
        if not argument:
            return cls()
        if not argument.isdigit() or int(argument) < 1:
            raise ControllerError(
                f"agent spec 'autotune:{argument}': give the points per attempt as a positive "
                "integer, e.g. autotune:4"
            )
        return cls(int(argument))

    def check_available(self) -> None:
        """Always available: it needs no model, key or network."""

    def run(self, session: AgentSession) -> SessionResult:
        started = time.time()
        transcript: list[dict] = [{"role": "user", "content": session.prompt}]
        solution = session.workspace / "solution"
        try:
            manifest = json.loads((solution / "solution.json").read_text())
            entry = manifest["spec"]["entry_point"].split("::", 1)[0]
            source = (solution / entry).read_text()
            settings = declared_settings(source)
        except (OSError, KeyError, ValueError, SyntaxError) as error:
            return _ended(transcript, "error", f"cannot read the solution: {error}")
        if settings.point is None or not settings.space:
            return _ended(
                transcript, "error", f"{entry} declares no TUNING and TUNING_SPACE to search"
            )
        history = _history(session.workspace)
        plan = plan_points(settings, history, self.points_per_attempt)
        transcript.append({"role": "autotune", "step": "plan", **plan.model_dump(mode="json")})
        if not plan.points:
            transcript.append(
                {"role": "autotune", "step": "done", "note": "every reachable point was tried"}
            )
            return _ended(transcript, "finished", None, started)
        tools = FencedTools(session)
        chosen = plan.points[0]
        if len(plan.points) > 1:
            chosen = self._screen(session, tools, solution, entry, source, plan, transcript)
        outcome = tools.call(
            "write", {"path": f"solution/{entry}", "content": with_point(source, chosen)}
        )
        transcript.append(
            {
                "role": "autotune",
                "step": "write",
                "point": chosen,
                "ok": outcome.ok,
                "output": outcome.output[:500],
            }
        )
        return _ended(transcript, "finished", None, started, tools.events)

    def _screen(self, session, tools, solution, entry, source, plan: SearchPlan, transcript):
        """Evaluate each point in the fence; the fastest passing one (first on a CPU) wins."""
        device = "cuda" if getattr(session.policy, "gpu", False) else "cpu"
        scratch = session.workspace / SCREEN_FOLDER
        results: list[tuple[Point, dict]] = []
        try:
            for index, point in enumerate(plan.points):
                folder = scratch / f"point-{index}"
                shutil.copytree(solution, folder, ignore=shutil.ignore_patterns("__pycache__"))
                (folder / entry).write_text(with_point(source, point))
                measured = self._evaluate(session, folder, device)
                transcript.append(
                    {"role": "autotune", "step": "screen", "point": point, **measured}
                )
                results.append((point, measured))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        passing = [(point, m) for point, m in results if m.get("status") == "PASSED"]
        if not passing:
            return plan.points[0]
        timed = [(point, m) for point, m in passing if m.get("weighted_us")]
        if timed:
            return min(timed, key=lambda item: item[1]["weighted_us"])[0]
        return passing[0][0]

    def _evaluate(self, session: AgentSession, folder: Path, device: str) -> dict:
        """`controller evaluate` in the fence, with this interpreter and its import path."""
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
            timeout_s=session.limits.turn_timeout_s,
        )
        argv = [sys.executable, "-m", "controller", "evaluate", "task", "--solution"]
        argv += [str(folder.relative_to(session.workspace)), "--device", device, "--json"]
        result = session.fence.run(argv, policy, cwd=session.workspace.resolve())
        try:
            document = json.loads(_text(result.stdout))
        except ValueError:
            return {"status": "SCREEN_FAILED", "reason": _text(result.stderr)[-300:]}
        measured = {"status": document["status"], "reason": document.get("reason", "")[:300]}
        workloads = (document.get("timing") or {}).get("workloads") or {}
        if workloads:
            total = sum(row["weight"] for row in workloads.values()) or 1.0
            measured["weighted_us"] = (
                sum(row["weight"] * row["candidate_median_us"] for row in workloads.values())
                / total
            )
            measured["speedups"] = {name: row["speedup"] for name, row in workloads.items()}
        return measured


def _history(workspace: Path) -> list[dict]:
    try:
        history = json.loads((workspace / "history" / "attempts.json").read_text())
    except (OSError, ValueError):
        return []
    return history if isinstance(history, list) else []


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _ended(transcript, reason, error, started=None, events=()) -> SessionResult:
    started = started or time.time()
    turn = TraceEvent(
        name="autotune search",
        category="agent_turn",
        start_s=started,
        duration_s=time.time() - started,
    )
    if error:
        print(f"controller: autotune: {error}", file=sys.stderr)
    return SessionResult(
        transcript=transcript,
        usage=Usage(),
        exit_reason=reason,
        error=error,
        events=[turn, *events],
    )
