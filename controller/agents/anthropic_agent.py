"""The `anthropic:<model>` backend: Messages API with tool use; the key stays in the controller."""

from __future__ import annotations

import anthropic

from controller.agents.api_agent import ApiAgent, sdk_errors
from controller.agents.chat_loop import (
    MalformedReply,
    ModelReply,
    ToolCall,
)
from controller.agents.tools import TOOL_SPECS, ToolOutcome

MAX_OUTPUT_TOKENS = 8192


class AnthropicProvider:
    """Speaks the Messages API through the official SDK, one call at a time."""

    def __init__(self, client: anthropic.Anthropic, model: str, system: str = ""):
        self.client = client
        self.model = model
        self.system = system
        self.tools = [
            {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
            for s in TOOL_SPECS
        ]

    def opening_messages(self, system: str, prompt: str) -> list[dict]:
        self.system = system
        return [{"role": "user", "content": prompt}]

    def send(self, messages: list[dict], timeout_s: float) -> ModelReply:
        with sdk_errors(anthropic, timeout_s):
            response = self.client.messages.create(
                model=self.model,
                max_tokens=MAX_OUTPUT_TOKENS,
                system=self.system,
                messages=messages,
                tools=self.tools,
                timeout=timeout_s,
            )
        return self._reply(response)

    def _reply(self, response) -> ModelReply:
        try:
            blocks = [block.model_dump(exclude_none=True) for block in response.content]
            usage = response.usage
            input_tokens = (
                usage.input_tokens
                + (usage.cache_creation_input_tokens or 0)
                + (usage.cache_read_input_tokens or 0)
            )
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
