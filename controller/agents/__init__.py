"""Coding agents the controller runs for one attempt, all behind one protocol (`Agent`)."""

from __future__ import annotations

from controller.agents.base import (
    Agent,
    AgentLimits,
    AgentSession,
    SessionResult,
    TraceEvent,
    Usage,
)
from controller.errors import ControllerError

__all__ = [
    "Agent",
    "AgentLimits",
    "AgentSession",
    "SessionResult",
    "TraceEvent",
    "Usage",
    "make_agent",
]

SPEC_FORMS = (
    "anthropic:<model>, openai:<model>, claude, codex, scripted:<file>, autotune[:<submissions>], "
    "seed:<tuned/PROFILE>/<operator>[+<agent>], template:<operator>[+<agent>]"
)


def make_agent(spec: str, *, base_url: str | None = None) -> Agent:
    """Build the backend an agent spec names; an unknown spec is a one-line ControllerError."""
    kind, _, argument = spec.partition(":")
    if kind == "anthropic":
        from controller.agents.anthropic_agent import AnthropicAgent

        return AnthropicAgent(argument, base_url=base_url)
    if kind == "openai":
        from controller.agents.openai_agent import OpenAIAgent

        return OpenAIAgent(argument, base_url=base_url)
    if kind == "scripted":
        from controller.agents.scripted_agent import ScriptedAgent

        return ScriptedAgent(argument)
    if kind == "autotune":
        from controller.agents.autotune_agent import AutotuneAgent

        return AutotuneAgent.from_argument(argument)
    if kind == "seed":
        from controller.agents.seeded_agent import SeededAgent

        return SeededAgent.from_argument(
            argument, lambda inner: make_agent(inner, base_url=base_url)
        )
    if kind == "template":
        from controller.agents.seeded_agent import SeededAgent

        return SeededAgent.from_template(
            argument, lambda inner: make_agent(inner, base_url=base_url)
        )
    if kind == "claude":
        from controller.agents.claude_cli_agent import ClaudeCliAgent

        return ClaudeCliAgent(model=argument or None, base_url=base_url)
    if kind == "codex":
        from controller.agents.codex_cli_agent import CodexCliAgent

        return CodexCliAgent(model=argument or None, base_url=base_url)
    raise ControllerError(f"unknown agent spec {spec!r}; use one of: {SPEC_FORMS}")
