"""The `openai:<model>` backend: Chat Completions with tool calls, for any compatible server."""

from __future__ import annotations

import json

import openai

from controller.agents.api_agent import ApiAgent, sdk_errors
from controller.agents.chat_loop import (
    MalformedReply,
    ModelReply,
    ToolCall,
)
from controller.agents.provider_preflight import openai_check
from controller.agents.tools import TOOL_SPECS, ToolOutcome

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_OUTPUT_TOKENS = 16384
"""The output tokens one call asks for at most when a token or dollar cap is set."""


class OpenAIProvider:
    """Speaks Chat Completions through the official SDK, one call at a time."""

    def __init__(self, client: openai.OpenAI, model: str):
        self.client = client
        self.model = model
        self.tools = [{"type": "function", "function": spec} for spec in TOOL_SPECS]

    def opening_messages(self, system: str, prompt: str) -> list[dict]:
        return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]

    max_output_tokens = MAX_OUTPUT_TOKENS

    def send(
        self, messages: list[dict], timeout_s: float, max_output_tokens: int | None = None
    ) -> ModelReply:
        capped = {} if max_output_tokens is None else {"max_completion_tokens": max_output_tokens}
        with sdk_errors(openai, timeout_s):
            response = self.client.chat.completions.create(
                model=self.model, messages=messages, tools=self.tools, timeout=timeout_s, **capped
            )
        return self._reply(response)

    def _reply(self, response) -> ModelReply:
        try:
            message = response.choices[0].message
            usage = response.usage
            input_tokens, output_tokens = usage.prompt_tokens, usage.completion_tokens
        except (AttributeError, IndexError, TypeError) as error:
            raise MalformedReply(f"reply lacks a choice or usage: {error}") from error
        calls = [self._tool_call(call) for call in message.tool_calls or []]
        assistant = {"role": "assistant", "content": message.content or ""}
        if message.tool_calls:
            assistant["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
                for call in message.tool_calls
            ]
        return ModelReply(
            message=assistant,
            tool_calls=calls,
            input_tokens=input_tokens or 0,
            output_tokens=output_tokens or 0,
        )

    def _tool_call(self, call) -> ToolCall:
        name = call.function.name
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError as error:
            problem = f"arguments for {name} were not valid JSON ({error}); send a JSON object"
            return ToolCall(id=call.id, name=name, arguments={}, problem=problem)
        if not isinstance(arguments, dict):
            return ToolCall(id=call.id, name=name, arguments={}, problem="arguments not an object")
        return ToolCall(id=call.id, name=name, arguments=arguments)

    def tool_result_messages(self, results: list[tuple[ToolCall, ToolOutcome]]) -> list[dict]:
        return [
            {
                "role": "tool",
                "tool_call_id": call.id,
                "content": outcome.output if outcome.ok else f"ERROR: {outcome.output}",
            }
            for call, outcome in results
        ]


class OpenAIAgent(ApiAgent):
    """Runs a session against an OpenAI-compatible model; tool calls go through the fence."""

    family = "openai"
    key_variable = "OPENAI_API_KEY"
    base_url_variable = "OPENAI_BASE_URL"
    key_hint = " (any non-empty value for a local server that ignores it)"

    def provider(self):
        client = openai.OpenAI(api_key=self._key(), base_url=self.base_url, max_retries=0)
        return OpenAIProvider(client, self.model)

    def preflight(self) -> None:
        """One line and exit 2 before the run when the URL, key or model is wrong."""
        base = self.base_url or DEFAULT_BASE_URL
        openai_check(self.spec, base, self._key() or "", self.model, self.key_variable)
