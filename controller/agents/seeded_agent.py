"""The `seed:<profile folder>/<operator>+<agent>` backend: a tune run that starts from a kernel
an existing profile ships (from any GPU, torch or Triton), so profiles carry to new hardware;
and `template:<operator>+<agent>`, which starts from the product's kernel template for the
operator (`controller.agents.kernel_templates`).

Attempt 1 writes the seed's sources over the workspace's incumbent (its `solution.json` stays
the controller's, so the seed must keep the task's entry point), through the same fenced tools
every agent uses; the controller's gates judge it here like any candidate. With
`seed:<folder>/<operator>+template+<agent>`, attempt 2 writes the product's kernel template
as a challenger (where its files differ from the seed's): a profile tuned elsewhere may ship an
older kernel than the product does now, and the paired gates, not the spec, choose between
them. Later attempts are the inner agent's (by default `autotune`, which then searches the
incumbent's declared space). The seed's files are checked against the digests its profile
records before they are written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from controller.agents.base import Agent, AgentSession, SessionResult, TraceEvent, Usage
from controller.agents.kernel_templates import template_files
from controller.agents.tools import FencedTools
from controller.errors import ControllerError
from gates.tuning.launch_settings import declared_settings
from operators.errors import ProfileError
from operators.profiles import read_profile, verify_files

SPEC_FORM = "seed:<tuned/PROFILE>/<operator>[+template][+<agent>]"
TEMPLATE_FORM = "template:<operator>[+<agent>]"
STARTING_KINDS = ("seed:", "template:")
CHALLENGER = "template"
"""After a seed's `+`: the product's kernel template challenges the seed in attempt 2."""
SEED_TURN = "seed from "
"""How an attempt's agent turn is named when it writes a start: `seed from template` or
`seed from <profile>` (reports read which submission shipped from it)."""


class SeededAgent:
    """Submits a profile's shipped kernel (or, with no profile folder, the operator's kernel
    template) first, then hands the run to `inner`."""

    def __init__(
        self,
        profile_folder: Path | None,
        operator: str,
        inner: Agent,
        inner_spec: str,
        challenger: bool = False,
    ) -> None:
        self.profile_folder = None if profile_folder is None else Path(profile_folder)
        self.operator, self.inner = operator, inner
        self.challenger = challenger and profile_folder is not None
        then = f"{CHALLENGER}+{inner_spec}" if self.challenger else inner_spec
        self.spec = (
            f"template:{operator}+{inner_spec}"
            if profile_folder is None
            else f"seed:{profile_folder}/{operator}+{then}"
        )

    @classmethod
    def from_argument(cls, argument: str, make_inner) -> SeededAgent:
        """`tuned/h200/rms_norm+autotune`: the profile folder, the operator, the next agent;
        `tuned/h200/qkv_projection+template+autotune` puts the template between them."""
        where, inner_spec = _inner(argument, "seed")
        challenger = inner_spec == CHALLENGER or inner_spec.startswith(f"{CHALLENGER}+")
        if challenger:
            inner_spec = inner_spec.removeprefix(CHALLENGER).removeprefix("+") or "autotune"
        if not where or "/" not in where:
            raise ControllerError(f"agent spec 'seed:{argument}': use {SPEC_FORM}")
        folder, _, operator = where.rpartition("/")
        return cls(Path(folder), operator, make_inner(inner_spec), inner_spec, challenger)

    @classmethod
    def from_template(cls, argument: str, make_inner) -> SeededAgent:
        """`qkv_projection+autotune`: the operator whose template starts, the next agent."""
        operator, inner_spec = _inner(argument, "template")
        if not operator or "/" in operator:
            raise ControllerError(f"agent spec 'template:{argument}': use {TEMPLATE_FORM}")
        return cls(None, operator, make_inner(inner_spec), inner_spec)

    @property
    def source_name(self) -> str:
        return "template" if self.profile_folder is None else f"{self.profile_folder}"

    def starts(self) -> list[tuple[str, str | None, dict[str, str]]]:
        """What attempts 1, 2, ... write before the inner agent's turns: (name, entry point,
        files) of the seed, then of the challenging template where its files differ."""
        entry, files = self.seed_files()
        starts = [(Path(self.source_name).name, entry, files)]
        if self.challenger:
            template = template_files(self.operator)
            if any(files.get(path) != text for path, text in template.items()):
                starts.append(("template", None, template))
        return starts

    def seed_files(self) -> tuple[str | None, dict[str, str]]:
        """The seed's entry point and its sources by path inside `solution/`, digest-checked;
        a template's entry point is the task's own (None: its files overwrite it)."""
        if self.profile_folder is None:
            return None, template_files(self.operator)
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
        """Refuse before the run starts when the seed (or its challenger) is missing or
        tampered with."""
        self.starts()
        self.inner.check_available()

    def preflight(self) -> None:
        """The inner agent's provider check, when it has one (later attempts are its own)."""
        check = getattr(self.inner, "preflight", None)
        if check is not None:
            check()

    def run(self, session: AgentSession) -> SessionResult:
        """Attempt n writes the n-th start (the seed, then a challenging template). A later
        attempt is the inner agent's; where no start was kept and the incumbent declares no
        space to search, the seed is written again first, so the tuner searches the seed's
        space rather than nothing."""
        started = time.time()
        transcript: list[dict] = [{"role": "user", "content": session.prompt}]
        try:
            starts = self.starts()
            if session.attempt > len(starts) and _declares_space(session.workspace):
                return self.inner.run(session)
            again = session.attempt > len(starts)  # the seed again, for the search after it
            name, entry, files = starts[0 if again else session.attempt - 1]
            task_entry = _entry_point(session.workspace / "solution" / "solution.json")
            if entry is not None and entry != task_entry:
                raise ControllerError(
                    f"the seed's entry point {entry} is not the task's {task_entry}"
                )
            entry_file = task_entry.split("::", 1)[0]
            if entry is None and entry_file not in files:
                raise ControllerError(
                    f"the template writes {', '.join(sorted(files))}, not the task's entry file "
                    f"{entry_file} (a template of another operator?)"
                )
        except (ControllerError, OSError, ValueError, KeyError) as error:
            reason = f"seed {self.source_name}/{self.operator}: {error}"
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
            name=f"{SEED_TURN}{name}",
            category="agent_turn",
            start_s=started,
            duration_s=time.time() - started,
            args={"files": len(files), "operator": self.operator},
        )
        written = SessionResult(
            transcript=transcript, usage=Usage(), exit_reason="finished",
            events=[turn, *tools.events],
        )  # fmt: skip
        if session.attempt <= len(starts):
            return written
        searched = self.inner.run(session)
        return searched.model_copy(
            update={
                "transcript": [*transcript, *searched.transcript[1:]],
                "events": [*written.events, *searched.events],
            }
        )


def _declares_space(workspace: Path) -> bool:
    """Whether the workspace's entry file declares a `TUNING_SPACE` to search."""
    try:
        entry = _entry_point(workspace / "solution" / "solution.json").split("::", 1)[0]
        return declared_settings((workspace / "solution" / entry).read_text()).space is not None
    except (OSError, KeyError, ValueError, SyntaxError):
        return True  # the inner agent reports what it cannot read


def _inner(argument: str, kind: str) -> tuple[str, str]:
    """`where+inner` split; the inner agent defaults to `autotune` and may not start a run."""
    where, _, inner_spec = argument.partition("+")
    inner_spec = inner_spec or "autotune"
    if inner_spec.startswith(STARTING_KINDS):
        raise ControllerError(f"agent spec '{kind}:{argument}': a seed cannot seed a seed")
    return where, inner_spec


def _entry_point(manifest: Path) -> str:
    return json.loads(manifest.read_text())["spec"]["entry_point"]
