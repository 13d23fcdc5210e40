"""The agent protocol and its records, shared by every backend and by the run engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

ExitReason = Literal[
    "finished", "exhausted", "turn_limit", "token_limit", "dollar_limit", "timeout", "error"
]
"""`exhausted`: the agent has nothing left worth judging (the tuner's screen holds no untried
point faster than the incumbent, or no time to screen); the run stops after that attempt."""


class AgentLimits(BaseModel):
    """Budgets one agent session may spend before the controller stops it."""

    model_config = ConfigDict(frozen=True)

    max_turns: int = 60
    """Model calls (API backends) or assistant turns (CLI backends) allowed."""
    max_tokens: int | None = None
    """Input plus output tokens allowed; None means unlimited."""
    max_dollars: float | None = None
    """Estimated spend allowed; None means unlimited."""
    turn_timeout_s: float = 300
    """Seconds one model call or one tool call may take."""
    wall_s: float = 1800
    """Seconds the whole session may take."""


class AgentSession(BaseModel):
    """Everything one attempt hands to an agent: where it works, what it is told, its fence."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    workspace: Path
    """The single-commit copy of BASE the agent edits."""
    prompt: str
    """The task text, including feedback from earlier attempts."""
    context: tuple[Path, ...] = ()
    """Read-only paths the agent may consult."""
    fence: Any
    """A `sandbox` fence; every command the agent causes runs through `fence.run`."""
    policy: Any
    """The `sandbox.policy.FencePolicy` those commands run under."""
    limits: AgentLimits = AgentLimits()
    """Budgets for this session."""
    attempt: int = 1
    """1-based attempt number within the run."""
    scratch: Path | None = None
    """A writable folder outside the workspace, kept for the whole session (each fenced command
    gets a fresh TMPDIR); its contents never become part of the candidate."""
    usage_log: Path | None = None
    """Where the running usage is appended after every model call (`usage_log.UsageLog`)."""


class Usage(BaseModel):
    """What a session spent, including calls that failed or could not be parsed."""

    input_tokens: int = 0
    """Every input token, the cached ones below among them."""
    output_tokens: int = 0
    dollars: float = 0.0
    calls: int = 0
    failed_calls: int = 0
    cache_write_tokens: int = 0
    """Input tokens written to the provider's prompt cache (billed above the input price)."""
    cache_read_tokens: int = 0
    """Input tokens read from the provider's prompt cache (billed at a fraction of it)."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens, the figure token limits are checked against."""
        return self.input_tokens + self.output_tokens


class TraceEvent(BaseModel):
    """One span on the run's Chrome trace timeline: a model turn or a tool call."""

    name: str
    category: Literal["agent_turn", "tool_call"]
    start_s: float
    """Wall-clock start, `time.time()` seconds."""
    duration_s: float
    args: dict = Field(default_factory=dict)


class SessionResult(BaseModel):
    """What a session produced: the full transcript, what it cost, and why it stopped."""

    transcript: list[dict]
    usage: Usage
    exit_reason: ExitReason
    error: str | None = None
    events: list[TraceEvent] = Field(default_factory=list)


@runtime_checkable
class Agent(Protocol):
    """A coding agent the controller can run for one attempt."""

    spec: str

    def check_available(self) -> None:
        """Raise ControllerError (one line) when this backend cannot run here."""

    def run(self, session: AgentSession) -> SessionResult:
        """Run one session to completion or to a limit; never raise for agent misbehaviour."""
