"""Renders a scripted reply as the OpenAI Responses API event stream (what the codex CLI reads)."""

from __future__ import annotations

import time
import uuid

from tests.agents.protocol_formats import Reply


def response_events(reply: Reply, model: str) -> list[tuple[str, dict]]:
    """created, one output item per text or call (added, deltas, done), then completed."""
    response_id = f"resp_{uuid.uuid4().hex[:16]}"
    shell = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "in_progress",
        "output": [],
        "usage": None,
    }
    events: list[tuple[str, dict]] = [("response.created", {"response": shell})]
    events.append(("response.in_progress", {"response": shell}))
    outputs: list[dict] = []
    if reply.text:
        outputs.append(_message_events(events, len(outputs), reply.text))
    for call in reply.calls:
        outputs.append(_call_events(events, len(outputs), call))
    usage = {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
    done = dict(shell, status="completed", output=outputs, usage=usage)
    events.append(("response.completed", {"response": done}))
    return [
        (name, dict(data, type=name, sequence_number=number))
        for number, (name, data) in enumerate(events)
    ]


def _message_events(events: list, index: int, text: str) -> dict:
    item_id = f"msg_{uuid.uuid4().hex[:16]}"
    empty = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress"}
    events.append(
        ("response.output_item.added", {"output_index": index, "item": empty | {"content": []}})
    )
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    events.append(("response.content_part.added", where | {"part": part}))
    events.append(("response.output_text.delta", where | {"delta": text}))
    events.append(("response.output_text.done", where | {"text": text}))
    events.append(("response.content_part.done", where | {"part": part | {"text": text}}))
    item = empty | {"status": "completed", "content": [part | {"text": text}]}
    events.append(("response.output_item.done", {"output_index": index, "item": item}))
    return item


def _call_events(events: list, index: int, call) -> dict:
    item_id = f"fc_{uuid.uuid4().hex[:16]}"
    item = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "call_id": call.id,
        "name": call.name,
        "arguments": "",
    }
    events.append(("response.output_item.added", {"output_index": index, "item": item}))
    arguments = call.argument_text()
    where = {"item_id": item_id, "output_index": index}
    events.append(("response.function_call_arguments.delta", where | {"delta": arguments}))
    events.append(("response.function_call_arguments.done", where | {"arguments": arguments}))
    item = item | {"status": "completed", "arguments": arguments}
    events.append(("response.output_item.done", {"output_index": index, "item": item}))
    return item
