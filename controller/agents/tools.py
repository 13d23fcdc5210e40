"""The agent's tools (bash, read, write, edit, list), each executed inside the session's fence."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pydantic import BaseModel

from controller.agents.base import AgentSession, TraceEvent
from controller.agents.fence_toolbelt import with_project_tools

OUTPUT_LIMIT = 12_000
"""Characters of tool output handed back to the model (head and tail kept)."""

RUNNER_SOURCE = (Path(__file__).parent / "fenced_tool_runner.py").read_text()

TOOL_SPECS: list[dict] = [
    {
        "name": "bash",
        "description": "Run a bash command in the workspace; returns exit code, stdout and stderr.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run."}},
            "required": ["command"],
        },
    },
    {
        "name": "read",
        "description": "Read a text file (path relative to the workspace).",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "write",
        "description": "Create or overwrite a text file with the given content.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "edit",
        "description": "Replace one exact, unique occurrence of `old` with `new` in a file.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old": {"type": "string"},
                "new": {"type": "string"},
            },
            "required": ["path", "old", "new"],
        },
    },
    {
        "name": "list",
        "description": "List a directory's entries (dirs end with /, symlinks with @).",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Defaults to '.'."}},
        },
    },
]
TOOL_NAMES = frozenset(spec["name"] for spec in TOOL_SPECS)


class ToolOutcome(BaseModel):
    """What one tool call returned to the model."""

    ok: bool
    output: str


def truncate(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """Keep a model's context sane: the head and tail of long output, with the cut stated."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


def interpreter_paths() -> tuple[Path, tuple[Path, ...]]:
    """The real Python binary for the runner and the stdlib folders it must read."""
    executable = Path(sys.executable).resolve()
    readable = {Path(sys.base_prefix).resolve(), executable.parent}
    return executable, tuple(sorted(readable))


class FencedTools:
    """Executes tool calls for one session through `session.fence.run`, never in this process."""

    def __init__(self, session: AgentSession):
        self.session = session
        self.events: list[TraceEvent] = []
        self.python, extra_readable = interpreter_paths()
        policy = session.policy
        readable = tuple(policy.readable) + tuple(
            path for path in extra_readable if path not in tuple(policy.readable)
        )
        readable += tuple(path for path in session.context if path not in readable)
        self.policy = with_project_tools(
            updated_policy(policy, readable=readable, timeout_s=session.limits.turn_timeout_s),
            scratch=session.scratch,
        )

    def call(self, name: str, arguments: dict) -> ToolOutcome:
        """Run one tool call and record it on the trace; bad arguments come back as errors."""
        started = time.time()
        try:
            outcome = self._dispatch(name, arguments)
        except (KeyError, TypeError) as error:
            outcome = ToolOutcome(ok=False, output=f"bad arguments for {name}: {error!r}")
        outcome = ToolOutcome(ok=outcome.ok, output=truncate(outcome.output))
        self.events.append(
            TraceEvent(
                name=name,
                category="tool_call",
                start_s=started,
                duration_s=time.time() - started,
                args={"ok": outcome.ok, "arguments": _brief(arguments)},
            )
        )
        return outcome

    def _dispatch(self, name: str, arguments: dict) -> ToolOutcome:
        if name not in TOOL_NAMES:
            return ToolOutcome(ok=False, output=f"unknown tool {name!r}; use {sorted(TOOL_NAMES)}")
        if name == "bash":
            return self._bash(str(arguments["command"]))
        request = {"tool": name, "path": str(arguments.get("path") or ".")}
        for key in ("content", "old", "new"):
            if key in arguments:
                request[key] = str(arguments[key])
        return self._file_tool(request)

    def _bash(self, command: str) -> ToolOutcome:
        result = self._run(["bash", "-c", command], stdin=None)
        if result.timed_out:
            return ToolOutcome(ok=False, output=f"timed out after {result.seconds:.0f}s")
        text = f"exit code {result.returncode}\n"
        for label, stream in (("stdout", result.stdout), ("stderr", result.stderr)):
            if stream:
                text += f"{label}:\n{_text(stream).rstrip(chr(10))}\n"
        return ToolOutcome(ok=result.returncode == 0, output=text)

    def _file_tool(self, request: dict) -> ToolOutcome:
        argv = [str(self.python), "-I", "-S", "-c", RUNNER_SOURCE]
        result = self._run(argv, stdin=json.dumps(request))
        if result.timed_out:
            return ToolOutcome(ok=False, output=f"timed out after {result.seconds:.0f}s")
        try:
            return ToolOutcome.model_validate_json(_text(result.stdout))
        except ValueError:
            detail = _text(result.stderr).strip() or f"exit code {result.returncode}"
            return ToolOutcome(ok=False, output=f"{request['tool']} refused: {detail}")

    def _run(self, argv: list[str], stdin: str | None):
        return self.session.fence.run(
            argv, self.policy, stdin=stdin, cwd=self.session.workspace.resolve()
        )


def updated_policy(policy, **changes):
    """A copy of a fence policy with changes, validated again (paths resolved and checked)."""
    return type(policy).model_validate({**policy.model_dump(), **changes})


def _text(value: str | bytes | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _brief(arguments: dict) -> dict:
    return {key: (str(value)[:200]) for key, value in arguments.items()}
