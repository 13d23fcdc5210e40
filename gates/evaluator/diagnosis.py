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
    trailing = _trailing_rows(bad if not bool(unwritten.any()) else unwritten)
    if trailing is not None:
        first, total = trailing
        return TrailingRowsSkipped(f"{where}: rows {first}..{total - 1} of {total} not computed")
    if bool(unwritten.any()):
        return UninitialisedOutput(
            f"{where}: {int(unwritten.sum())} output elements were never written"
        )
    for key, other in others.items():
        if other.shape == got.shape and other.dtype == got.dtype and torch.equal(other, got):
            return OutputReplayed(f"{where}: output equals the output for {key}")
    copied = _copied_rows(got, expected)
    if copied:
        return RowsCopiedAcrossBatch(f"{where}: {copied} rows duplicate other rows")
    narrower = narrower_format(got, expected)
    if narrower is not None:
        return PrecisionDowngrade(f"{where}: every value fits {narrower}; computed too narrow")
    return None


def _rows(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.dim() == 0:
        return tensor.reshape(1, 1)
    return tensor.reshape(tensor.shape[0], -1) if tensor.dim() > 1 else tensor.reshape(-1, 1)


def _trailing_rows(bad: torch.Tensor) -> tuple[int, int] | None:
    """(first bad row, rows) when exactly a trailing block of leading-axis rows is bad."""
    for view in _leading_views(bad):
        rows_bad = view.any(dim=1)
        rows_all_bad = view.all(dim=1)
        total = rows_bad.numel()
        if total < 2 or not bool(rows_bad.any()):
            continue
        first = int(rows_bad.nonzero()[0, 0])
        if first > 0 and bool(rows_all_bad[first:].all()):
            return first, total
    return None


def _leading_views(mask: torch.Tensor):
    if mask.dim() >= 2:
        yield mask.reshape(mask.shape[0], -1)
    if mask.dim() >= 3:
        yield mask.reshape(-1, mask.shape[-1])


def _copied_rows(got: torch.Tensor, expected: torch.Tensor) -> int:
    """How many more duplicated rows the output has than the reference."""
    if got.dim() < 2:
        return 0
    width = got.shape[-1]
    got_rows = got.contiguous().reshape(-1, width)
    ref_rows = expected.contiguous().reshape(-1, width)
    if got_rows.shape[0] < 2:
        return 0
    extra = _duplicates(got_rows) - _duplicates(ref_rows)
    return extra if extra > 0 and extra * 4 >= got_rows.shape[0] else 0


def _duplicates(rows: torch.Tensor) -> int:
    as_int = rows.view(torch.int16) if rows.element_size() == 2 else rows.view(torch.int32)
    return rows.shape[0] - torch.unique(as_int, dim=0).shape[0]
