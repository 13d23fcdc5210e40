"""The tokens a provider reported in one relayed answer, read from the bytes the relay passed on.

The key relay sees every model call a CLI agent makes; reading each answer's `usage` there (a
whole JSON body or a server-sent event stream, in the Anthropic or OpenAI shapes) lets the run
log the spend call by call, before the CLI itself reports anything, so a kill loses nothing.
"""

from __future__ import annotations

import json
from typing import NamedTuple


class ReportedTokens(NamedTuple):
    """One answer's tokens; `input` counts the cached ones among them."""

    input: int
    output: int
    cache_write: int
    cache_read: int


def reported_usage(body: bytes) -> ReportedTokens:
    """The tokens one answer reported; zeros where it reported none. A stream's counts are
    cumulative, so the largest figure seen for each is the answer's."""
    if body.lstrip().startswith(b"{"):
        texts = [body]
    else:
        texts = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
    best = ReportedTokens(0, 0, 0, 0)
    for text in texts:
        try:
            event = json.loads(text)
        except ValueError:
            continue
        for usage in _usage_blocks(event):
            best = ReportedTokens(*(max(a, b) for a, b in zip(best, _tokens(usage), strict=True)))
    return best


def _tokens(usage: dict) -> ReportedTokens:
    """Anthropic reports fresh, written and read input apart; OpenAI reports all input with
    the cached part inside its details."""
    write = _count(usage.get("cache_creation_input_tokens"))
    read = _count(usage.get("cache_read_input_tokens"))
    if "prompt_tokens" in usage or "input_tokens_details" in usage:
        details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details") or {}
        total = _count(usage.get("input_tokens")) or _count(usage.get("prompt_tokens"))
        cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
        output = _count(usage.get("output_tokens")) or _count(usage.get("completion_tokens"))
        return ReportedTokens(total, output, 0, cached)
    total = _count(usage.get("input_tokens")) + write + read
    return ReportedTokens(total, _count(usage.get("output_tokens")), write, read)


def _count(value) -> int:
    return value if isinstance(value, int) and value > 0 else 0


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
