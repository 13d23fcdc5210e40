"""Renders scripted model replies in the wire formats of the Anthropic and OpenAI APIs."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field


@dataclass
class Call:
    """One tool call in a reply; `raw_arguments` overrides `arguments` to send broken JSON."""

    name: str
    arguments: dict = field(default_factory=dict)
    raw_arguments: str | None = None
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:12]}")

    def argument_text(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else json.dumps(self.arguments)


@dataclass
class Reply:
    """A successful model answer: optional text, tool calls, and the usage to report."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    input_tokens: int = 100
    output_tokens: int = 20
    delay_s: float = 0.0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0


@dataclass
class Failure:
    """An HTTP error the provider would send (overloaded, rate limited, server error)."""

    status: int
    kind: str = "overloaded_error"
    message: str = "Overloaded"
    retry_after: str = "0"
    """The `retry-after` header a 429 or 529 carries (seconds)."""


@dataclass
class Malformed:
    """A 200 answer whose body is not valid JSON."""

    body: str = '{"id": "msg_broken", "content": [ {"type": "te'


def anthropic_message(reply: Reply, model: str) -> dict:
    content = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in reply.calls
    ]
    return {
        "id": f"msg_{uuid.uuid4().hex[:16]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cache_read_tokens,
        },
    }


def anthropic_events(reply: Reply, model: str) -> list[tuple[str, dict]]:
    """The SSE sequence of a streamed message: start, blocks with deltas, delta with usage, stop."""
    whole = anthropic_message(reply, model)
    start = dict(whole, content=[], stop_reason=None)
    start["usage"] = dict(whole["usage"], output_tokens=1)
    events = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": opening}),
            ("ping", {"type": "ping"}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]  # fmt: skip
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(failure: Failure) -> dict:
    return {"type": "error", "error": {"type": failure.kind, "message": failure.message}}


def openai_error(failure: Failure) -> dict:
    return {"error": {"message": failure.message, "type": failure.kind, "code": failure.kind}}


def chat_completion(reply: Reply, model: str) -> dict:
    message: dict = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.argument_text()},
            }
            for call in reply.calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": _openai_usage(reply),
    }


def chat_completion_chunks(reply: Reply, model: str) -> list[dict]:
    """Streamed chat completion: role, content, tool-call deltas, finish, then a usage chunk."""
    whole = chat_completion(reply, model)
    base = {key: whole[key] for key in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict, finish: str | None = None) -> dict:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return dict(base, choices=[choice])

    chunks = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        chunks.append(chunk({"content": reply.text}))
    for index, call in enumerate(whole["choices"][0]["message"].get("tool_calls", [])):
        chunks.append(chunk({"tool_calls": [dict(call, index=index)]}))
    chunks.append(chunk({}, whole["choices"][0]["finish_reason"]))
    chunks.append(dict(base, choices=[], usage=whole["usage"]))
    return chunks


def _openai_usage(reply: Reply) -> dict:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
