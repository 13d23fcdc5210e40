"""The `autotune` agent: no model and no key. It screens every point of the space a kernel
declares (`TUNING_SPACE` beside `TUNING` in the solution's entry file) inside the fence, with a
cheap timing on CUDA (`controller.screening`), then writes the best-ranked point not yet
submitted as this attempt's candidate, which the controller's gates judge like any other.

`autotune:<few>` submits at most that many of the screen's best points in a run (default 3),
one per attempt. An attempt with nothing worth submitting ends `exhausted`, which stops the
run rather than spend its later attempts on the same answer. The screen of a space is kept
for the later attempts of the run in this process (a resumed run screens again). Every point,
its status and its screen time go to the transcript.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

from controller.agents.autotune_screen import screen_in_fence
from controller.agents.autotune_search import next_submission
from controller.agents.base import AgentSession, SessionResult, TraceEvent, Usage
from controller.agents.tools import FencedTools
from controller.errors import ControllerError
from controller.screening.report import ScreenReport, space_points
from gates.tuning.launch_settings import declared_settings, with_point

DEFAULT_SUBMISSIONS = 3
BUDGET_SHARE = 0.9  # of one tool call's timeout, for the whole screen
CPU_BUDGET_S = 60.0  # the interpreter only checks the contract: a cheaper screen will do
SEARCH_TURN = "autotune search"
"""The name of the agent turn in an attempt's events (reports read which submission shipped)."""
MIN_GPU_SCREEN_S = 15.0
"""The shortest CUDA screen started: on an H100 a 9.6 s screen timed no point of the MLP
projection's space, 18.5 s and 18.8 s ones timed 20 and 35 (2026-12-07). A shorter one would
spend the attempt's judging on a blind guess and end the run past its minutes."""


class AutotuneAgent:
    """Screens the whole declared space once, then submits its best points one per attempt."""

    def __init__(self, submissions: int = DEFAULT_SUBMISSIONS, screen=screen_in_fence) -> None:
        self.submissions = submissions
        self.spec = "autotune" if submissions == DEFAULT_SUBMISSIONS else f"autotune:{submissions}"
        self._screen = screen
        self._screens: dict[str, ScreenReport] = {}

    @classmethod
    def from_argument(cls, argument: str) -> AutotuneAgent:
        if not argument:
            return cls()
        if not argument.isdigit() or int(argument) < 1:
            raise ControllerError(
                f"agent spec 'autotune:{argument}': give how many screened points to submit "
                "as a positive integer, e.g. autotune:3"
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
        report = self._screened(session, source, settings, transcript)
        if report is None:
            return _ended(transcript, "exhausted", None, started)
        choice = next_submission(
            report, settings.point, _history(session.workspace), self.submissions
        )
        transcript.append({"role": "autotune", "step": "choose", **choice.model_dump(mode="json")})
        if choice.point is None:
            return _ended(transcript, "exhausted", None, started)
        tools = FencedTools(session)
        outcome = tools.call(
            "write", {"path": f"solution/{entry}", "content": with_point(source, choice.point)}
        )
        transcript.append(
            {
                "role": "autotune",
                "step": "write",
                "point": choice.point,
                "ok": outcome.ok,
                "output": outcome.output[:500],
            }
        )
        return _ended(transcript, "finished", None, started, tools.events)

    def _screened(self, session, source, settings, transcript) -> ScreenReport | None:
        """The screen of this space (kept from an earlier attempt when the sources, the task
        and the device are the same), every point written to the transcript; None, and no
        submission, where a CUDA screen would have less than MIN_GPU_SCREEN_S."""
        key = _screen_key(session, source)
        report = self._screens.get(key)
        if report is not None:
            transcript.append(
                {
                    "role": "autotune",
                    "step": "screen_kept",
                    "note": f"the screen of an earlier attempt ({len(report.points)} points)",
                }
            )
            return report
        budget = min(session.limits.turn_timeout_s, session.limits.wall_s) * BUDGET_SHARE
        if not getattr(session.policy, "gpu", False):
            budget = min(budget, CPU_BUDGET_S)
        elif budget < MIN_GPU_SCREEN_S:
            transcript.append(
                {
                    "role": "autotune",
                    "step": "no_screen",
                    "note": f"{budget:.1f} s left for the screen, under the {MIN_GPU_SCREEN_S:.0f}"
                    " s it needs to time a point: nothing submitted",
                }
            )
            return None
        report = self._screen(session, space_points(settings), budget)
        self._screens[key] = report
        summary = report.model_dump(mode="json", exclude={"points"})
        transcript.append(
            {"role": "autotune", "step": "screen_summary", **summary, "counts": report.counts()}
        )
        for screened in report.points:
            transcript.append(
                {"role": "autotune", "step": "screened_point", **screened.model_dump()}
            )
        return report


def _screen_key(session: AgentSession, source: str) -> str:
    """Same sources but their TUNING, same task, same device: the same screen."""
    digest = hashlib.sha256(with_point(source, {}).encode())
    identity = session.workspace / "task" / "identity.json"
    digest.update(identity.read_bytes() if identity.is_file() else b"")
    digest.update(b"cuda" if getattr(session.policy, "gpu", False) else b"cpu")
    return digest.hexdigest()


def _history(workspace: Path) -> list[dict]:
    try:
        history = json.loads((workspace / "history" / "attempts.json").read_text())
    except (OSError, ValueError):
        return []
    return history if isinstance(history, list) else []


def _ended(transcript, reason, error, started=None, events=()) -> SessionResult:
    started = started or time.time()
    turn = TraceEvent(
        name=SEARCH_TURN,
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
