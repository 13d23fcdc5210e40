"""The `claude` backend: the Claude Code CLI, headless with streamed JSON, inside the fence."""

from __future__ import annotations

import os
import time
from pathlib import Path

from controller.agents.base import AgentSession, SessionResult, Usage
from controller.agents.cli_launch import CliLaunch, json_lines, require_cli
from controller.agents.cli_result import finish
from controller.agents.key_proxy import PLACEHOLDER_KEY, KeyProxy, relay_counts, relay_record
from controller.agents.pricing import price_for
from controller.agents.provider_preflight import anthropic_check
from controller.agents.relay_usage import ReportedTokens
from controller.agents.usage_log import UsageLog
from controller.errors import ControllerError

DEFAULT_BASE_URL = "https://api.anthropic.com"
RESULT_REASONS = {"error_max_turns": "turn_limit", "error_max_budget_usd": "dollar_limit"}


class ClaudeCliAgent:
    """Runs `claude -p --output-format stream-json` in the fence; it reaches only the key proxy."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        executable: str | Path | None = None,
    ):
        self.model = model
        self.spec = f"claude:{model}" if model else "claude"
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.api_key = api_key
        self.executable = executable

    def _key(self) -> str | None:
        return self.api_key or os.environ.get("ANTHROPIC_API_KEY") or None

    def check_available(self) -> None:
        """Refuse before the run starts when the CLI or the API key is missing."""
        require_cli("claude", self.executable, self.spec)
        if not self._key():
            raise ControllerError(
                f"agent {self.spec} needs ANTHROPIC_API_KEY in the controller's environment"
            )

    def preflight(self) -> None:
        """One line and exit 2 before the run when the URL, key or model is wrong (without a
        model, the key and the URL are checked on the model list)."""
        base = self.base_url or DEFAULT_BASE_URL
        anthropic_check(self.spec, base, self._key() or "", self.model or "", "ANTHROPIC_API_KEY")

    def run(self, session: AgentSession) -> SessionResult:
        """Launch the CLI once for this attempt and read its stream into the result."""
        self.check_available()
        executable = require_cli("claude", self.executable, self.spec)
        limits = session.limits
        argv = ["-p", "--output-format", "stream-json", "--verbose"]
        if self.model:
            argv += ["--model", self.model]
        argv += ["--max-turns", str(limits.max_turns), "--permission-mode", "bypassPermissions"]
        argv += ["--no-session-persistence"]
        if limits.max_dollars is not None:
            argv += ["--max-budget-usd", str(limits.max_dollars)]
        env = {
            "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
            "API_TIMEOUT_MS": str(int(limits.turn_timeout_s * 1000)),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",  # the fence is the sandbox; lets permissions be bypassed as root
        }
        started = time.time()
        upstream = self.base_url or DEFAULT_BASE_URL
        relay = KeyProxy(
            upstream,
            self._key() or "",
            "x-api-key",
            limits.turn_timeout_s,
            usage_log=UsageLog(session.usage_log),
            price=price_for(self.model or "claude")[0],
            limits=session.limits,
        )
        with relay as proxy:
            env["ANTHROPIC_BASE_URL"] = proxy.url
            launch = CliLaunch(session, executable, proxy.port)
            fenced = launch.run(argv, env, stdin=session.prompt)
        events, stray = json_lines(fenced.stdout)
        usage, reason, error, tools = self._read_stream(events)
        relay_counts(usage, proxy)  # never fewer calls than reached the provider
        if proxy.cap_reached is not None:  # the relay refused a call the caps had no room for
            reason, error = proxy.cap_reached.stop, proxy.cap_reached.message
        transcript = events + [{"type": "unparsed", "line": line} for line in stray]
        transcript += relay_record(proxy)
        return finish(session, fenced, started, transcript, usage, reason, error, tools, self.spec)

    def _read_stream(self, events: list[dict]) -> tuple[Usage, str, str | None, list[str]]:
        """Usage, exit reason, error and tool names from the CLI's stream-json events."""
        usage = Usage()
        message_ids, tools = set(), []
        result, model = None, self.model or "claude"
        for event in events:
            kind = event.get("type")
            if kind == "system" and event.get("subtype") == "init":
                model = self.model or event.get("model") or model
            elif kind == "system" and event.get("subtype") == "api_retry":
                usage.failed_calls += 1
            elif kind == "assistant":
                message = event.get("message") or {}
                message_ids.add(message.get("id"))
                tools += [
                    block.get("name", "?")
                    for block in message.get("content") or []
                    if block.get("type") == "tool_use"
                ]
            elif kind == "result":
                result = event
        usage.calls = len(message_ids) + usage.failed_calls
        if result is None:
            return usage, "error", None, tools
        tokens = session_tokens(result)
        usage.input_tokens, usage.output_tokens = tokens.input, tokens.output
        usage.cache_write_tokens, usage.cache_read_tokens = tokens.cache_write, tokens.cache_read
        price, _ = price_for(model)
        estimate = price.dollars(*tokens)
        usage.dollars = max(float(result.get("total_cost_usd") or 0.0), estimate)
        subtype = result.get("subtype", "")
        if subtype in RESULT_REASONS:
            return usage, RESULT_REASONS[subtype], f"claude stopped: {subtype}", tools
        if result.get("is_error") or subtype != "success":
            if result.get("api_error_status"):
                usage.failed_calls += 1
            detail = result.get("result") or result.get("errors") or subtype
            return usage, "error", f"claude reported an error: {detail}", tools
        return usage, "finished", None, tools


def session_tokens(result: dict) -> ReportedTokens:
    """The whole session's tokens from the final `result` event: input (cached included),
    output, cache writes and cache reads.

    `modelUsage` sums every model the CLI called; older streams only carry `usage`.
    """
    per_model = result.get("modelUsage") or {}
    if per_model:
        names = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
        entries = list(per_model.values())
    else:
        names = (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        )
        entries = [result.get("usage") or {}]
    fresh, output, write, read = (
        sum(int(entry.get(name) or 0) for entry in entries) for name in names
    )
    return ReportedTokens(fresh + write + read, output, write, read)
