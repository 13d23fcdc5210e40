"""Turns a finished CLI agent launch into a SessionResult: limits, timing and failure wording."""

from __future__ import annotations

import time

from controller.agents.base import AgentSession, SessionResult, TraceEvent, Usage

STDERR_TAIL = 400


def over_budget(session: AgentSession, usage: Usage) -> tuple[str, str] | None:
    """The limit a finished session overran (the CLIs cannot be stopped mid-turn on tokens)."""
    limits = session.limits
    if limits.max_tokens is not None and usage.total_tokens >= limits.max_tokens:
        return "token_limit", f"used {usage.total_tokens} tokens of max_tokens={limits.max_tokens}"
    if limits.max_dollars is not None and usage.dollars >= limits.max_dollars:
        return "dollar_limit", f"spent ${usage.dollars:.4f} of max_dollars={limits.max_dollars}"
    return None


def finish(
    session: AgentSession,
    fence_result,
    started: float,
    transcript: list[dict],
    usage: Usage,
    reason: str,
    error: str | None,
    tool_names: list[str],
    spec: str,
) -> SessionResult:
    """Apply the timeout and budget verdicts and build the trace spans for one CLI launch."""
    if fence_result.timed_out:
        reason, error = "timeout", f"{spec} ran past wall_s={session.limits.wall_s}"
    elif reason in ("finished", "error") and (overrun := over_budget(session, usage)):
        reason, error = overrun
    if reason == "error" and not error:
        error = f"{spec} exited with code {fence_result.returncode}: {stderr_tail(fence_result)}"
    ended = time.time()
    turn = TraceEvent(
        name=f"{spec} session",
        category="agent_turn",
        start_s=started,
        duration_s=ended - started,
        args={"calls": usage.calls, "tokens": usage.total_tokens, "exit": reason},
    )
    tools = [
        TraceEvent(name=name, category="tool_call", start_s=ended, duration_s=0.0)
        for name in tool_names
    ]
    return SessionResult(
        transcript=transcript,
        usage=usage,
        exit_reason=reason,
        error=error,
        events=[turn, *tools],
    )


def stderr_tail(fence_result) -> str:
    """The last line-ish of a CLI's stderr, enough to say why it failed."""
    text = fence_result.stderr or ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = " ".join(text.split())
    return text[-STDERR_TAIL:] or "no output on stderr"
