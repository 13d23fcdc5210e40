"""The `seed:<profile folder>/<operator>+<agent>` backend: a tune run that starts from a kernel
an existing profile ships (from any GPU, torch or Triton), so profiles carry to new hardware.

Attempt 1 writes the seed's sources over the workspace's incumbent (its `solution.json` stays
the controller's, so the seed must keep the task's entry point), through the same fenced tools
every agent uses; the controller's gates
judge it here like any candidate. Later attempts are the inner agent's (by default `autotune`,
which then searches the seed's declared space once it is the incumbent). The seed's files are
checked against the digests its profile records before they are written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from controller.agents.base import Agent, AgentSession, SessionResult, TraceEvent, Usage
from controller.agents.tools import FencedTools
from controller.errors import ControllerError
from operators.errors import ProfileError
from operators.profiles import read_profile, verify_files

SPEC_FORM = "seed:<tuned/PROFILE>/<operator>[+<agent>]"


class SeededAgent:
    """Submits a profile's shipped kernel first, then hands the run to `inner`."""

    def __init__(self, profile_folder: Path, operator: str, inner: Agent, inner_spec: str):
        self.profile_folder, self.operator = Path(profile_folder), operator
        self.inner = inner
        self.spec = f"seed:{profile_folder}/{operator}+{inner_spec}"

    @classmethod
    def from_argument(cls, argument: str, make_inner) -> SeededAgent:
        """`tuned/h200/rms_norm+autotune`: the profile folder, the operator, the next agent."""
        where, _, inner_spec = argument.partition("+")
        inner_spec = inner_spec or "autotune"
        if not where or "/" not in where:
            raise ControllerError(f"agent spec 'seed:{argument}': use {SPEC_FORM}")
        folder, _, operator = where.rpartition("/")
        if inner_spec.startswith("seed:"):
            raise ControllerError(f"agent spec 'seed:{argument}': a seed cannot seed a seed")
        return cls(Path(folder), operator, make_inner(inner_spec), inner_spec)

    def seed_files(self) -> tuple[str, dict[str, str]]:
        """The seed's entry point and its sources by path inside `solution/`, digest-checked."""
        try:
            profile = read_profile(self.profile_folder)
            verify_files(self.profile_folder, profile)
        except ProfileError as error:
            raise ControllerError(f"seed profile {self.profile_folder}: {error}") from None
        if self.operator not in profile.operators:
            raise ControllerError(
                f"seed profile {profile.name!r} ships no kernel for {self.operator!r}; it ships "
                f"{', '.join(sorted(profile.operators)) or 'none'}"
            )
        folder = self.profile_folder / self.operator / "solution"
        document = json.loads((folder / "solution.json").read_text())
        files = {  # the files as installed (and digest-checked), not the manifest's copies
            path.relative_to(folder).as_posix(): path.read_text()
            for path in sorted(folder.rglob("*.py"))
        }
        return document["spec"]["entry_point"], files

    def check_available(self) -> None:
        """Refuse before the run starts when the seed is missing or tampered with."""
        self.seed_files()
        self.inner.check_available()

    def preflight(self) -> None:
        """The inner agent's provider check, when it has one (later attempts are its own)."""
        check = getattr(self.inner, "preflight", None)
        if check is not None:
            check()

    def run(self, session: AgentSession) -> SessionResult:
        if session.attempt > 1:
            return self.inner.run(session)
        started = time.time()
        transcript: list[dict] = [{"role": "user", "content": session.prompt}]
        try:
            entry, files = self.seed_files()
            task_entry = _entry_point(session.workspace / "solution" / "solution.json")
            if entry != task_entry:
                raise ControllerError(
                    f"the seed's entry point {entry} is not the task's {task_entry}"
                )
        except (ControllerError, OSError, ValueError, KeyError) as error:
            reason = f"seed {self.profile_folder}/{self.operator}: {error}"
            return SessionResult(
                transcript=transcript, usage=Usage(), exit_reason="error", error=reason
            )
        tools = FencedTools(session)
        for path, content in sorted(files.items()):
            outcome = tools.call("write", {"path": f"solution/{path}", "content": content})
            transcript.append(
                {"role": "seed", "step": "write", "path": path, "ok": outcome.ok,
                 "output": outcome.output[:300]}
            )  # fmt: skip
        turn = TraceEvent(
            name=f"seed from {self.profile_folder.name}",
            category="agent_turn",
            start_s=started,
            duration_s=time.time() - started,
            args={"files": len(files), "operator": self.operator},
        )
        return SessionResult(
            transcript=transcript, usage=Usage(), exit_reason="finished",
            events=[turn, *tools.events],
        )  # fmt: skip


def _entry_point(manifest: Path) -> str:
    return json.loads(manifest.read_text())["spec"]["entry_point"]
