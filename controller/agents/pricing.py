"""Dollar estimates per model family, so dollar limits can stop a session before a bill grows."""

from __future__ import annotations

import logging

from pydantic import BaseModel

log = logging.getLogger(__name__)


class Price(BaseModel, frozen=True):
    """US dollars per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def dollars(self, input_tokens: int, output_tokens: int) -> float:
        """What these tokens cost at this price."""
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


DEFAULT_PRICE = Price(input_per_mtok=15.0, output_per_mtok=75.0)
"""Charged for models not in the table: the dearest family, so limits err on the safe side."""

# Longest matching prefix wins; list prices rounded up to the dearer generation of each family.
PRICE_TABLE: dict[str, Price] = {
    "claude-opus": Price(input_per_mtok=15.0, output_per_mtok=75.0),
    "claude-sonnet": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-haiku": Price(input_per_mtok=1.0, output_per_mtok=5.0),
    "claude-3-5-haiku": Price(input_per_mtok=0.8, output_per_mtok=4.0),
    "gpt-4o-mini": Price(input_per_mtok=0.15, output_per_mtok=0.6),
    "gpt-4o": Price(input_per_mtok=2.5, output_per_mtok=10.0),
    "gpt-4.1-mini": Price(input_per_mtok=0.4, output_per_mtok=1.6),
    "gpt-4.1": Price(input_per_mtok=2.0, output_per_mtok=8.0),
    "gpt-5-mini": Price(input_per_mtok=0.25, output_per_mtok=2.0),
    "gpt-5": Price(input_per_mtok=1.25, output_per_mtok=10.0),
    "o4-mini": Price(input_per_mtok=1.1, output_per_mtok=4.4),
    "o3": Price(input_per_mtok=2.0, output_per_mtok=8.0),
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
