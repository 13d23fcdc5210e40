"""The `anthropic:<model>` backend: Messages API with tool use; the key stays in the controller."""

from __future__ import annotations

import anthropic

from controller.agents.api_agent import ApiAgent, sdk_errors
from controller.agents.chat_loop import (
    MalformedReply,
    ModelReply,
    ToolCall,
)
from controller.agents.provider_preflight import anthropic_check
from controller.agents.tools import TOOL_SPECS, ToolOutcome

MAX_OUTPUT_TOKENS = 8192
CACHE_CONTROL = {"type": "ephemeral"}
DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicProvider:
    """Speaks the Messages API through the official SDK, one call at a time."""

    def __init__(
        self, client: anthropic.Anthropic, model: str, system: str = "", caching: bool = True
    ):
        self.client = client
        self.model = model
        self.system = system
        self.caching = caching
        self.tools = [
            {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
            for s in TOOL_SPECS
        ]

    def opening_messages(self, system: str, prompt: str) -> list[dict]:
        self.system = system
        return [{"role": "user", "content": prompt}]

    max_output_tokens = MAX_OUTPUT_TOKENS

    def send(
        self, messages: list[dict], timeout_s: float, max_output_tokens: int | None = None
    ) -> ModelReply:
        with sdk_errors(anthropic, timeout_s):
            response = self.client.messages.create(
                model=self.model,
                max_tokens=min(max_output_tokens or MAX_OUTPUT_TOKENS, MAX_OUTPUT_TOKENS),
                system=self._system_blocks(),
                messages=self._cached(messages),
                tools=self._cached_tools(),
                timeout=timeout_s,
            )
        return self._reply(response)

    # Prompt caching: the stable prefix (tools, system, the task and every earlier turn) is
    # marked so each call reads it from the cache and pays full price only for what is new.
    # Three breakpoints of the four allowed: tools, system, and the newest message, which moves
    # forward each turn (the stored conversation is never marked).

    def _cached_tools(self) -> list[dict]:
        if not self.caching or not self.tools:
            return self.tools
        return [*self.tools[:-1], {**self.tools[-1], "cache_control": CACHE_CONTROL}]

    def _system_blocks(self):
        if not self.caching or not self.system:
            return self.system
        return [{"type": "text", "text": self.system, "cache_control": CACHE_CONTROL}]

    def _cached(self, messages: list[dict]) -> list[dict]:
        if not self.caching or not messages:
            return messages
        last = messages[-1]
        content = last.get("content")
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}]
        elif isinstance(content, list) and content:
            blocks = [dict(block) for block in content]
        else:
            return messages
        blocks[-1] = {**blocks[-1], "cache_control": CACHE_CONTROL}
        return [*messages[:-1], {**last, "content": blocks}]

    def _reply(self, response) -> ModelReply:
        try:
            blocks = [block.model_dump(exclude_none=True) for block in response.content]
            usage = response.usage
            cache_write = usage.cache_creation_input_tokens or 0
            cache_read = usage.cache_read_input_tokens or 0
            input_tokens = usage.input_tokens + cache_write + cache_read
            output_tokens = usage.output_tokens
        except (AttributeError, TypeError) as error:
            raise MalformedReply(f"reply lacks content or usage: {error}") from error
        calls = []
        for block in blocks:
            if block.get("type") != "tool_use":
                continue
            arguments = block.get("input")
            problem = None
            if not isinstance(arguments, dict):
                arguments, problem = {}, "tool input must be a JSON object"
            calls.append(
                ToolCall(id=block["id"], name=block["name"], arguments=arguments, problem=problem)
            )
        return ModelReply(
            message={"role": "assistant", "content": blocks},
            tool_calls=calls,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_write_tokens=cache_write,
            cache_read_tokens=cache_read,
        )

    def tool_result_messages(self, results: list[tuple[ToolCall, ToolOutcome]]) -> list[dict]:
        content = [
            {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": outcome.output,
                "is_error": not outcome.ok,
            }
            for call, outcome in results
        ]
        return [{"role": "user", "content": content}]


class AnthropicAgent(ApiAgent):
    """Runs a session against an Anthropic model; tool calls go through the session's fence."""

    family = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"
    base_url_variable = "ANTHROPIC_BASE_URL"

    def provider(self):
        client = anthropic.Anthropic(api_key=self._key(), base_url=self.base_url, max_retries=0)
        return AnthropicProvider(client, self.model)

    def preflight(self) -> None:
        """One line and exit 2 before the run when the URL, key or model is wrong."""
        base = self.base_url or DEFAULT_BASE_URL
        anthropic_check(self.spec, base, self._key() or "", self.model, self.key_variable)
