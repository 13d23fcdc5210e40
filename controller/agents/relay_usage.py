"""The tokens a provider reported in one relayed answer, read from the bytes the relay passed on.

The key relay sees every model call a CLI agent makes; reading each answer's `usage` there (a
whole JSON body or a server-sent event stream, in the Anthropic or OpenAI shapes) lets the run
log the spend call by call, before the CLI itself reports anything, so a kill loses nothing.
"""

from __future__ import annotations

import json

INPUT_FIELDS = (
    "input_tokens",
    "prompt_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
OUTPUT_FIELDS = ("output_tokens", "completion_tokens")


def reported_usage(body: bytes) -> tuple[int, int]:
    """(input tokens, output tokens) of one answer; zeros where it reported none. A stream's
    counts are cumulative, so the largest figure seen for each is the answer's."""
    if body.lstrip().startswith(b"{"):
        texts = [body]
    else:
        texts = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
    input_tokens = output_tokens = 0
    for text in texts:
        try:
            event = json.loads(text)
        except ValueError:
            continue
        for usage in _usage_blocks(event):
            input_tokens = max(input_tokens, _total(usage, INPUT_FIELDS[:1] + INPUT_FIELDS[2:]))
            input_tokens = max(input_tokens, _total(usage, INPUT_FIELDS[1:2]))
            output_tokens = max(output_tokens, max(_total(usage, (f,)) for f in OUTPUT_FIELDS))
    return input_tokens, output_tokens


def _usage_blocks(event) -> list[dict]:
    """`usage` at the top, or under `message` (Anthropic's start) or `response` (OpenAI's)."""
    if not isinstance(event, dict):
        return []
    holders = [event, event.get("message"), event.get("response")]
    return [
        holder["usage"]
        for holder in holders
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict)
    ]


def _total(usage: dict, fields: tuple[str, ...]) -> int:
    return sum(value for f in fields if isinstance(value := usage.get(f), int) and value > 0)
