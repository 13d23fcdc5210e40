"""The `scripted:<file>` backend: replays recorded tool actions per attempt, for demos and tests."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from controller.agents.base import AgentSession, SessionResult, TraceEvent, Usage
from controller.agents.tools import TOOL_NAMES, FencedTools
from controller.errors import ControllerError


class Script(BaseModel, frozen=True):
    """The file's contents: attempt n replays `attempts[n - 1]`, one tool call per action."""

    attempts: list[list[dict]]


class ScriptedAgent:
    """Replays a script through the same fenced tools the model backends use; costs nothing."""

    def __init__(self, path: str | Path):
        if not str(path):
            raise ControllerError("agent spec 'scripted:' needs a file, e.g. scripted:session.json")
        self.path = Path(path)
        self.spec = f"scripted:{path}"

    def load(self) -> Script:
        """Read and validate the script, naming the file in any error."""
        try:
            script = Script.model_validate_json(self.path.read_text())
        except OSError as error:
            raise ControllerError(f"cannot read agent script {self.path}: {error}") from None
        except ValidationError as error:
            first = error.errors()[0]
            raise ControllerError(
                f"agent script {self.path} is not valid: {first['msg']} at {first['loc']}"
            ) from None
        for number, actions in enumerate(script.attempts, start=1):
            for action in actions:
                if action.get("tool") not in TOOL_NAMES:
                    raise ControllerError(
                        f"agent script {self.path} attempt {number}: unknown tool "
                        f"{action.get('tool')!r}; use one of {sorted(TOOL_NAMES)}"
                    )
        return script

    def check_available(self) -> None:
        """Refuse before the run starts when the script is missing or malformed."""
        self.load()

    def run(self, session: AgentSession) -> SessionResult:
        """Replay this attempt's actions in order, recording each call and its output."""
        script = self.load()
        if not 1 <= session.attempt <= len(script.attempts):
            return SessionResult(
                transcript=[],
                usage=Usage(),
                exit_reason="error",
                error=f"agent script {self.path} has {len(script.attempts)} attempts; "
                f"attempt {session.attempt} has none",
            )
        started = time.time()
        tools = FencedTools(session)
        transcript: list[dict] = [{"role": "user", "content": session.prompt}]
        for action in script.attempts[session.attempt - 1]:
            arguments = {key: value for key, value in action.items() if key != "tool"}
            outcome = tools.call(action["tool"], arguments)
            transcript.append({"role": "assistant", "tool": action["tool"], "arguments": arguments})
            transcript.append({"role": "tool", "ok": outcome.ok, "output": outcome.output})
        turn = TraceEvent(
            name=f"scripted attempt {session.attempt}",
            category="agent_turn",
            start_s=started,
            duration_s=time.time() - started,
            args={"actions": len(script.attempts[session.attempt - 1])},
        )
        return SessionResult(
            transcript=transcript,
            usage=Usage(),
            exit_reason="finished",
            events=[turn, *tools.events],
        )
