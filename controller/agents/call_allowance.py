"""What the next model call may spend, decided before it is sent, so a cap is never passed.

A call's input is only counted by the provider after the call, so it is bounded from above:
the last call's reported input plus the characters added since at two characters a token
(tokenizers average three to four on code and prose), or, before the first answer, every
character of the request at that rate. The call's `max_tokens` is then what is left of the
token cap and of the dollar cap (input billed as fresh, at the dearer of the fresh and
cache-write prices); when less than `MIN_OUTPUT_TOKENS` is left the call is not made.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from controller.agents.base import AgentLimits, Usage
from controller.agents.pricing import Price

CHARACTERS_PER_TOKEN_BOUND = 2
MIN_OUTPUT_TOKENS = 256
"""Fewer output tokens than this cannot finish a useful turn; the session stops instead."""


class InputBound(BaseModel):
    """The last answered call: how many messages it sent and the input it was billed for."""

    messages: int = 0
    input_tokens: int = 0


def input_bound(messages: list[dict], fixed_characters: int, last: InputBound | None) -> int:
    """An upper bound on the next call's input tokens."""
    if last is None:
        characters = fixed_characters + len(json.dumps(messages))
        return characters // CHARACTERS_PER_TOKEN_BOUND + 1
    added = len(json.dumps(messages[last.messages :]))
    return last.input_tokens + added // CHARACTERS_PER_TOKEN_BOUND + 1


class Allowance(BaseModel):
    """The output tokens the next call may ask for (None: no cap applies), or why it may not
    be made (`stop`: the exit reason, `message`)."""

    max_output_tokens: int | None = None
    stop: str | None = None
    message: str | None = None


def output_allowance(
    limits: AgentLimits, usage: Usage, price: Price, input_tokens: int, ceiling: int
) -> Allowance:
    """The next call's output allowance under the session's token and dollar caps."""
    if limits.max_tokens is None and limits.max_dollars is None:
        return Allowance()
    allowance = ceiling
    if limits.max_tokens is not None:
        left = limits.max_tokens - usage.total_tokens - input_tokens
        allowance = min(allowance, left)
        if left < MIN_OUTPUT_TOKENS:
            return Allowance(
                stop="token_limit",
                message=f"used {usage.total_tokens} tokens of max_tokens={limits.max_tokens}; "
                f"the next call's input (up to {input_tokens}) leaves no room for an answer",
            )
    if limits.max_dollars is not None:
        input_rate = price.input_per_mtok * max(1.0, price.cache_write_factor) / 1e6
        left_dollars = limits.max_dollars - usage.dollars - input_tokens * input_rate
        left = int(left_dollars / (price.output_per_mtok / 1e6)) if left_dollars > 0 else 0
        allowance = min(allowance, left)
        if left < MIN_OUTPUT_TOKENS:
            return Allowance(
                stop="dollar_limit",
                message=f"spent ${usage.dollars:.4f} of max_dollars={limits.max_dollars}; the "
                f"next call's input (up to {input_tokens} tokens) leaves no room for an answer",
            )
    return Allowance(max_output_tokens=allowance)
