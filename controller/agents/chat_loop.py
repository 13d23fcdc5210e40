"""The conversation loop the controller runs for API backends: call, count, check limits, tools."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel

from controller.agents.base import AgentSession, SessionResult, TraceEvent, Usage
from controller.agents.call_allowance import InputBound, input_bound, output_allowance
from controller.agents.pricing import Price
from controller.agents.tools import TOOL_SPECS, FencedTools, ToolOutcome
from controller.agents.usage_log import UsageLog
from controller.errors import ProviderUnavailable


class TransientError(Exception):
    """The provider failed in a way worth retrying: 429, 529, 5xx, a dropped connection.
    `status` and `retry_after_s` (what the provider asked for) when it answered."""

    def __init__(
        self, message: str, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s

    @property
    def rate_limited(self) -> bool:
        return self.status in RATE_LIMIT_STATUS


RATE_LIMIT_STATUS = frozenset({429, 529})
"""Too many requests, overloaded: the provider asks to wait, the attempt is not at fault."""


class MalformedReply(Exception):
    """The provider answered, but the answer could not be understood."""


class TurnTimeout(Exception):
    """One model call ran past the per-turn timeout."""


class ProviderError(Exception):
    """The provider refused the call in a way retrying cannot fix (bad key, bad request)."""


class KeyRefused(ProviderError):
    """The provider refused the key (HTTP 401 or 403): no attempt can succeed until it is set.
    The backend names the variable to set; `usage`: what the session spent before."""

    usage: dict | None = None


class ToolCall(BaseModel):
    """One tool call the model asked for; `problem` is set when its arguments were unusable."""

    id: str
    name: str
    arguments: dict
    problem: str | None = None


class ModelReply(BaseModel):
    """One model call's answer, reduced to what the loop needs."""

    message: dict
    """The assistant message, in the provider's own format, as it goes back into the chat."""
    tool_calls: list[ToolCall]
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0


class ChatProvider(Protocol):
    """The provider-specific half of an API backend: message formats and one call."""

    model: str

    def opening_messages(self, system: str, prompt: str) -> list[dict]: ...

    max_output_tokens: int
    """The most output tokens one call asks for when no cap is closer."""

    def send(
        self, messages: list[dict], timeout_s: float, max_output_tokens: int | None = None
    ) -> ModelReply: ...

    def tool_result_messages(self, results: list[tuple[ToolCall, ToolOutcome]]) -> list[dict]: ...


class RetryPolicy(BaseModel, frozen=True):
    """Exponential backoff for transient provider errors and malformed replies; rate limits
    are waited out as the provider asks (`retry-after`), up to `max_pause_s` per model call,
    and cost no retry."""

    attempts: int = 6
    base_s: float = 1.0
    max_s: float = 30.0
    max_pause_s: float = 600.0
    """The longest one model call waits out rate limits before the run is interrupted."""

    def delay_s(self, failure_number: int) -> float:
        """Seconds to wait after the n-th consecutive failure (1-based)."""
        return min(self.max_s, self.base_s * 2 ** (failure_number - 1))


class LimitReached(Exception):
    """Stops the loop; the exit reason and message travel with it."""

    def __init__(self, reason: str, message: str | None = None):
        super().__init__(message or reason)
        self.reason = reason
        self.message = message


SYSTEM_PROMPT = (
    "You are a coding agent working in a git repository that is your current directory. "
    "Use the tools to inspect and change files and to run commands; paths are relative to "
    "the repository. Every command runs in a sandbox without network access. "
    "When the task is complete, answer with a short summary and no tool call."
)


def system_prompt(session: AgentSession) -> str:
    """The fixed instructions plus the read-only context paths, if any."""
    if not session.context:
        return SYSTEM_PROMPT
    listed = "\n".join(f"- {path}" for path in session.context)
    return f"{SYSTEM_PROMPT}\nRead-only reference material:\n{listed}"


class ChatLoop:
    """Runs one session against a provider, enforcing every limit after every call."""

    def __init__(
        self,
        provider: ChatProvider,
        price: Price,
        price_note: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.provider = provider
        self.price = price
        self.price_note = price_note
        self.retry = retry or RetryPolicy()
        self.sleep = sleep

    def run(self, session: AgentSession) -> SessionResult:
        """Converse until the model stops calling tools or a limit is reached."""
        system = system_prompt(session)
        messages = self.provider.opening_messages(system, session.prompt)
        usage = Usage()
        log = UsageLog(session.usage_log)
        tools = FencedTools(session)
        turn_events: list[TraceEvent] = []
        deadline = time.monotonic() + session.limits.wall_s
        reason, error = "turn_limit", None
        fixed_characters = len(system) + len(json.dumps(TOOL_SPECS))
        last: InputBound | None = None
        try:
            for turn in range(1, session.limits.max_turns + 1):
                started = time.time()
                bound = input_bound(messages, fixed_characters, last)
                allowance = output_allowance(
                    session.limits, usage, self.price, bound, self.provider.max_output_tokens
                )
                if allowance.stop:
                    raise LimitReached(allowance.stop, allowance.message)
                reply = self._call(
                    messages, session, usage, deadline, log, allowance.max_output_tokens
                )
                last = InputBound(messages=len(messages), input_tokens=reply.input_tokens)
                turn_events.append(self._turn_event(turn, started, reply))
                messages.append(reply.message)
                self._check_budget(session, usage)
                if not reply.tool_calls:
                    reason = "finished"
                    break
                results = [(call, self._execute(call, tools, usage)) for call in reply.tool_calls]
                messages.extend(self.provider.tool_result_messages(results))
                if time.monotonic() > deadline:
                    wall = session.limits.wall_s
                    raise LimitReached("timeout", f"session ran past wall_s={wall}")
        except LimitReached as stop:
            reason, error = stop.reason, stop.message
        if messages and messages[0].get("role") == "system":
            transcript = messages
        else:
            transcript = [{"role": "system", "content": system}, *messages]
        if reason == "turn_limit":
            error = f"stopped after max_turns={session.limits.max_turns} model calls"
        events = sorted(turn_events + tools.events, key=lambda event: event.start_s)
        return SessionResult(
            transcript=transcript, usage=usage, exit_reason=reason, error=error, events=events
        )

    def _call(
        self,
        messages,
        session,
        usage: Usage,
        deadline: float,
        log: UsageLog,
        max_output_tokens: int | None,
    ) -> ModelReply:
        """One model call with retries; every attempt, failed or not, is counted and logged
        before the next begins."""
        last_problem = ""
        failure_number, paused_s, pause = 0, 0.0, 0.0
        while failure_number < self.retry.attempts:
            if pause:  # only once the failed call is on disk
                self.sleep(pause)
                pause = 0.0
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LimitReached("timeout", f"session ran past wall_s={session.limits.wall_s}")
            usage.calls += 1
            try:
                timeout_s = min(session.limits.turn_timeout_s, remaining)
                reply = self.provider.send(messages, timeout_s, max_output_tokens)
                usage.input_tokens += reply.input_tokens
                usage.output_tokens += reply.output_tokens
                usage.cache_write_tokens += reply.cache_write_tokens
                usage.cache_read_tokens += reply.cache_read_tokens
                usage.dollars += self.price.dollars(
                    reply.input_tokens,
                    reply.output_tokens,
                    reply.cache_write_tokens,
                    reply.cache_read_tokens,
                )
            except TurnTimeout as timeout:
                usage.failed_calls += 1
                raise LimitReached("timeout", f"model call timed out: {timeout}") from None
            except KeyRefused as refusal:
                usage.failed_calls += 1
                refusal.usage = usage.model_dump(mode="json")
                raise
            except ProviderError as refusal:
                usage.failed_calls += 1
                raise LimitReached("error", f"model call refused: {refusal}") from None
            except (TransientError, MalformedReply) as problem:
                usage.failed_calls += 1
                last_problem = f"{type(problem).__name__}: {problem}"
                if isinstance(problem, TransientError) and problem.rate_limited:
                    wait = max(problem.retry_after_s or 0.0, self.retry.base_s)
                    if paused_s + wait > self.retry.max_pause_s:
                        raise ProviderUnavailable(
                            f"the provider kept refusing for rate limits ({problem}) past the "
                            f"{self.retry.max_pause_s:.0f} s the controller waits; the attempt "
                            "is not counted, resume the run later",
                            usage.model_dump(mode="json"),
                        ) from None
                    paused_s += wait
                    deadline += wait  # a pause the provider asked for costs the agent nothing
                    pause = wait
                    continue
                failure_number += 1
                if failure_number < self.retry.attempts:
                    pause = self.retry.delay_s(failure_number)
                continue
            else:
                return reply
            finally:
                log.record(usage)
        raise LimitReached(
            "error", f"model call failed {self.retry.attempts} times; last: {last_problem}"
        )

    def _execute(self, call: ToolCall, tools: FencedTools, usage: Usage) -> ToolOutcome:
        if call.problem:
            usage.failed_calls += 1
            return ToolOutcome(ok=False, output=call.problem)
        return tools.call(call.name, call.arguments)

    def _check_budget(self, session: AgentSession, usage: Usage) -> None:
        limits = session.limits
        if limits.max_tokens is not None and usage.total_tokens >= limits.max_tokens:
            raise LimitReached(
                "token_limit", f"used {usage.total_tokens} tokens of max_tokens={limits.max_tokens}"
            )
        if limits.max_dollars is not None and usage.dollars >= limits.max_dollars:
            raise LimitReached(
                "dollar_limit", f"spent ${usage.dollars:.4f} of max_dollars={limits.max_dollars}"
            )

    def _turn_event(self, turn: int, started: float, reply: ModelReply) -> TraceEvent:
        args = {
            "model": self.provider.model,
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_write_tokens": reply.cache_write_tokens,
            "cache_read_tokens": reply.cache_read_tokens,
            "tool_calls": [call.name for call in reply.tool_calls],
        }
        if self.price_note:
            args["price_note"] = self.price_note
        return TraceEvent(
            name=f"turn {turn}",
            category="agent_turn",
            start_s=started,
            duration_s=time.time() - started,
            args=args,
        )
