"""Name the cheat behind a wrong output, where its pattern gives one away.

Used by the judge: unwritten (poisoned) elements, rows copied across a batch, a trailing
block of rows never computed, outputs replayed from another call, or a narrower format.
"""

import torch

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.batch_skipping import RowsCopiedAcrossBatch, TrailingRowsSkipped
from gates.evaluator.detectors.precision import PrecisionDowngrade, narrower_format
from gates.evaluator.detectors.replay import OutputReplayed
from gates.evaluator.detectors.uninitialised_memory import UninitialisedOutput, poisoned_mask


def diagnose(
    where: str, got: torch.Tensor, expected: torch.Tensor, bad: torch.Tensor, others: dict
) -> CheatDetected | None:
    """The cheat a failing output shows, or None for a plain numerical error."""
    unwritten = poisoned_mask(got) & ~poisoned_mask(expected)
    if bool(unwritten.any()):
        trailing = _trailing_rows(unwritten)
        if trailing is not None:
            first, total = trailing
            return TrailingRowsSkipped(f"{where}: rows {first}..{total - 1} of {total} unwritten")
        count = int(unwritten.sum())
        return UninitialisedOutput(f"{where}: {count} output elements were never written")
    for key, other in others.items():
        if other.shape == got.shape and other.dtype == got.dtype and torch.equal(other, got):
            return OutputReplayed(f"{where}: output equals the output for {key}")
    copied = _copied_rows(got, bad)
    if copied:
        return RowsCopiedAcrossBatch(f"{where}: {copied} wrong rows are copies of computed rows")
    trailing = _trailing_rows(bad)
    if trailing is not None:
        first, total = trailing
        return TrailingRowsSkipped(f"{where}: rows {first}..{total - 1} of {total} not computed")
    narrower = narrower_format(got, expected)
    if narrower is not None:
        return PrecisionDowngrade(f"{where}: every value fits {narrower}; computed too narrow")
    return None


def _rows(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.dim() == 0:
        return tensor.reshape(1, 1)
    return tensor.reshape(tensor.shape[0], -1) if tensor.dim() > 1 else tensor.reshape(-1, 1)


def _trailing_rows(bad: torch.Tensor) -> tuple[int, int] | None:
    """(first bad row, rows) when the leading rows are right and a trailing block is wrong."""
    for view in _leading_views(bad):
        fraction = view.float().mean(dim=1)
        total = fraction.numel()
        wrong = fraction > 0.5
        if total < 2 or not bool(wrong.any()):
            continue
        first = int(wrong.nonzero()[0, 0])
        if first > 0 and bool((fraction[:first] == 0).all()) and bool(wrong[first:].all()):
            return first, total
    return None


def _leading_views(mask: torch.Tensor):
    if mask.dim() >= 2:
        yield mask.reshape(mask.shape[0], -1)
    if mask.dim() >= 3:
        yield mask.reshape(-1, mask.shape[-1])


def _copied_rows(got: torch.Tensor, bad: torch.Tensor) -> int:
    """How many wrong rows are byte copies of rows that were computed correctly."""
    if got.dim() < 2:
        return 0
    width = got.shape[-1]
    rows = got.contiguous().reshape(-1, width)
    bad_rows = bad.reshape(-1, width).any(dim=1)
    if rows.shape[0] < 2 or not bool(bad_rows.any()) or bool(bad_rows.all()):
        return 0
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[rows.element_size()]
    _, inverse = torch.unique(rows.view(view), dim=0, return_inverse=True)
    good_ids = set(inverse[~bad_rows].tolist())
    copies = sum(1 for row_id in inverse[bad_rows].tolist() if row_id in good_ids)
    return copies if copies * 2 >= int(bad_rows.sum()) else 0
