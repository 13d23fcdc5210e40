"""Returning memory the candidate never wrote, hoping it still holds an earlier result.

Every allocation the candidate makes during a checked call is filled with a NaN pattern
first, so an element left unwritten is seen as that exact pattern.
"""

import torch

from gates.evaluator.detectors import CheatDetected

POISON_BITS = {1: 0xA5, 2: 0x7FE5, 4: 0x7FE5A5A5, 8: 0x7FFCA5A5A5A5A5A5}
INTEGER_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


class UninitialisedOutput(CheatDetected):
    """Output elements still hold the poison written into fresh allocations: they were never
    computed (stale-memory reuse)."""


def poison(tensor: torch.Tensor) -> None:
    """Fill a fresh allocation with the poison pattern of its element size."""
    if tensor.numel() == 0 or tensor.is_complex() or tensor.dtype == torch.bool:
        return
    size = tensor.element_size()
    if size not in POISON_BITS or not tensor.is_contiguous():
        return
    value = POISON_BITS[size]
    if value >= 1 << (8 * size - 1):
        value -= 1 << (8 * size)
    tensor.view(INTEGER_VIEW[size]).fill_(value)


def poisoned_mask(tensor: torch.Tensor) -> torch.Tensor:
    """True where an element's bits are exactly the poison pattern."""
    size = tensor.element_size()
    value = POISON_BITS[size]
    if value >= 1 << (8 * size - 1):
        value -= 1 << (8 * size)
    return tensor.contiguous().view(INTEGER_VIEW[size]) == value
