"""Dollar estimates per model family, so dollar limits can stop a session before a bill grows."""

from __future__ import annotations

import logging

from pydantic import BaseModel

log = logging.getLogger(__name__)


class Price(BaseModel, frozen=True):
    """US dollars per million input and output tokens, and what cached input costs relative to
    fresh input: written to the cache (`cache_write_factor`) and read from it."""

    input_per_mtok: float
    output_per_mtok: float
    cache_write_factor: float = 1.25
    cache_read_factor: float = 0.1

    def dollars(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_write_tokens: int = 0,
        cache_read_tokens: int = 0,
    ) -> float:
        """What these tokens cost; `input_tokens` counts every input token, the cached ones
        (written or read) among them."""
        fresh = max(input_tokens - cache_write_tokens - cache_read_tokens, 0)
        billed_input = (
            fresh
            + cache_write_tokens * self.cache_write_factor
            + cache_read_tokens * self.cache_read_factor
        )
        return (billed_input * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


DEFAULT_PRICE = Price(input_per_mtok=15.0, output_per_mtok=75.0)
"""Charged for models not in the table: the dearest family, so limits err on the safe side."""

PRICE_TABLE_DATE = "2025-08"
"""When the list prices below were read from the providers' published price pages."""


def _openai(input_per_mtok: float, output_per_mtok: float, cached_per_mtok: float) -> Price:
    """OpenAI caches on its own: no write surcharge, cached input at its listed price."""
    return Price(
        input_per_mtok=input_per_mtok,
        output_per_mtok=output_per_mtok,
        cache_write_factor=1.0,
        cache_read_factor=cached_per_mtok / input_per_mtok,
    )


# Longest matching prefix wins; list prices rounded up to the dearer generation of each family.
# Anthropic: a 5-minute cache write costs 1.25x input, a cache read 0.1x (the Price defaults).
PRICE_TABLE: dict[str, Price] = {
    "claude-opus": Price(input_per_mtok=15.0, output_per_mtok=75.0),
    "claude-sonnet": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-haiku": Price(input_per_mtok=1.0, output_per_mtok=5.0),
    "claude-3-5-haiku": Price(input_per_mtok=0.8, output_per_mtok=4.0),
    "gpt-4o-mini": _openai(0.15, 0.6, 0.075),
    "gpt-4o": _openai(2.5, 10.0, 1.25),
    "gpt-4.1-mini": _openai(0.4, 1.6, 0.1),
    "gpt-4.1": _openai(2.0, 8.0, 0.5),
    "gpt-5-mini": _openai(0.25, 2.0, 0.025),
    "gpt-5": _openai(1.25, 10.0, 0.125),
    "o4-mini": _openai(1.1, 4.4, 0.275),
    "o3": _openai(2.0, 8.0, 0.5),
}


def price_for(model: str) -> tuple[Price, str | None]:
    """The price for a model and, when it is unknown, a note saying the default was used."""
    matches = [prefix for prefix in PRICE_TABLE if model.startswith(prefix)]
    if matches:
        return PRICE_TABLE[max(matches, key=len)], None
    note = (
        f"model {model!r} is not in the price table; estimating at the default "
        f"${DEFAULT_PRICE.input_per_mtok}/${DEFAULT_PRICE.output_per_mtok} per million tokens"
    )
    log.warning(note)
    return DEFAULT_PRICE, note
