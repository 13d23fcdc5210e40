"""The `codex` backend: the Codex CLI, `exec --json` against a configured provider, in the fence."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from controller.agents.base import AgentSession, SessionResult, Usage
from controller.agents.cli_launch import CliLaunch, json_lines, require_cli
from controller.agents.cli_result import finish
from controller.agents.key_proxy import (
    OPENAI_PATHS,
    PLACEHOLDER_KEY,
    KeyProxy,
    relay_counts,
    relay_record,
)
from controller.agents.pricing import price_for
from controller.agents.provider_preflight import openai_check
from controller.agents.usage_log import UsageLog
from controller.errors import ControllerError

DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLE = "OPENAI_API_KEY"
TOOL_ITEMS = {"command_execution": "bash", "file_change": "edit", "mcp_tool_call": "mcp"}


class CodexCliAgent:
    """Runs `codex exec --json` in the fence with its provider pointed at the key proxy."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        executable: str | Path | None = None,
    ):
        self.model = model or DEFAULT_MODEL
        self.spec = f"codex:{model}" if model else "codex"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.api_key = api_key
        self.executable = executable

    def _key(self) -> str | None:
        return self.api_key or os.environ.get(KEY_VARIABLE) or None

    def check_available(self) -> None:
        """Refuse before the run starts when the CLI or the API key is missing."""
        require_cli("codex", self.executable, self.spec)
        if not self._key():
            raise ControllerError(
                f"agent {self.spec} needs {KEY_VARIABLE} in the controller's environment"
            )

    def provider_table(self, session: AgentSession, base_url: str) -> str:
        """The `model_providers.controller` TOML table: base URL, key variable, retries."""
        fields = {
            "name": "controller",
            "base_url": base_url,
            "env_key": KEY_VARIABLE,
            "wire_api": "responses",
            "request_max_retries": 4,
            "stream_max_retries": 4,
            "stream_idle_timeout_ms": int(session.limits.turn_timeout_s * 1000),
        }
        return (
            "{" + ", ".join(f"{key} = {json.dumps(value)}" for key, value in fields.items()) + "}"
        )

    def preflight(self) -> None:
        """One line and exit 2 before the run when the URL, key or model is wrong."""
        openai_check(self.spec, self.base_url, self._key() or "", self.model, KEY_VARIABLE)

    def run(self, session: AgentSession) -> SessionResult:
        """Launch the CLI once for this attempt and read its JSONL events into the result."""
        self.check_available()
        executable = require_cli("codex", self.executable, self.spec)
        argv = ["exec", "--json", "--color", "never", "--skip-git-repo-check", "--ephemeral"]
        argv += ["--ignore-user-config", "--dangerously-bypass-approvals-and-sandbox"]
        argv += ["-m", self.model, "-c", 'model_provider="controller"']
        started = time.time()
        timeout_s = session.limits.turn_timeout_s
        key = self._key() or ""
        relay = KeyProxy(
            self.base_url,
            key,
            "authorization",
            timeout_s,
            OPENAI_PATHS,
            usage_log=UsageLog(session.usage_log),
            price=price_for(self.model)[0],
            limits=session.limits,
        )
        with relay as proxy:
            table = self.provider_table(session, proxy.url)
            launch = CliLaunch(session, executable, proxy.port)
            env = {KEY_VARIABLE: PLACEHOLDER_KEY, "CODEX_HOME": str(launch.home)}
            argv += ["-c", f"model_providers.controller={table}", "-"]
            fenced = launch.run(argv, env, stdin=session.prompt)
        events, stray = json_lines(fenced.stdout)
        usage, reason, error, tools = self._read_events(events)
        relay_counts(usage, proxy)  # never fewer calls than reached the provider
        if proxy.cap_reached is not None:  # the relay refused a call the caps had no room for
            reason, error = proxy.cap_reached.stop, proxy.cap_reached.message
        if reason == "finished" and usage.calls > session.limits.max_turns:
            reason = "turn_limit"
            error = (
                f"codex made {usage.calls} model calls, over max_turns={session.limits.max_turns}"
            )
        transcript = events + [{"type": "unparsed", "line": line} for line in stray]
        transcript += relay_record(proxy)
        return finish(session, fenced, started, transcript, usage, reason, error, tools, self.spec)

    def _read_events(self, events: list[dict]) -> tuple[Usage, str, str | None, list[str]]:
        """Usage, exit reason, error and tool names from `codex exec --json` events."""
        usage = Usage()
        tools: list[str] = []
        turns_completed, failure = 0, None
        for event in events:
            kind = event.get("type")
            if kind == "item.completed":
                item_type = (event.get("item") or {}).get("type")
                if item_type in TOOL_ITEMS:
                    tools.append(TOOL_ITEMS[item_type])
            elif kind == "turn.completed":
                turns_completed += 1
                counts = event.get("usage") or {}
                usage.input_tokens += int(counts.get("input_tokens") or 0)
                usage.output_tokens += int(counts.get("output_tokens") or 0)
                usage.cache_read_tokens += int(counts.get("cached_input_tokens") or 0)
            elif kind == "turn.failed":
                failure = (event.get("error") or {}).get("message") or "turn failed"
            elif kind == "error":
                usage.failed_calls += 1
                failure = failure or event.get("message")
        usage.calls = len(tools) + turns_completed + usage.failed_calls
        price, _ = price_for(self.model)
        usage.dollars = price.dollars(
            usage.input_tokens, usage.output_tokens, cache_read_tokens=usage.cache_read_tokens
        )
        if turns_completed and not any(event.get("type") == "turn.failed" for event in events):
            return usage, "finished", None, tools
        return usage, "error", f"codex failed: {failure}" if failure else None, tools
