"""Name the cheat behind a wrong output, where its pattern gives one away.

Used by the judge: unwritten (poisoned) elements, rows copied across a batch, a trailing
block of rows never computed, outputs replayed from another call, or a narrower format.

A label needs evidence another draw would also show: rows count as skipped or copied only
when they are grossly wrong (not a near miss of the tolerance, which an honest but
inaccurate kernel gives on some draws and not on others).
"""

import torch

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.batch_skipping import RowsCopiedAcrossBatch, TrailingRowsSkipped
from gates.evaluator.detectors.precision import PrecisionDowngrade, narrower_format
from gates.evaluator.detectors.replay import OutputReplayed
from gates.evaluator.detectors.uninitialised_memory import UninitialisedOutput, poisoned_mask

GROSS_ABSOLUTE = 2.0**-7
"""Eight times the contracts' atol: near a zero reference, an element off by about the
tolerance is a near miss (an honest kernel's rounding), not a value never computed."""


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
    gross = bad & grossly_wrong(got, expected)
    copied = _copied_rows(got, gross)
    if copied:
        return RowsCopiedAcrossBatch(f"{where}: {copied} wrong rows are copies of computed rows")
    trailing = _trailing_rows(gross)
    if trailing is not None:
        first, total = trailing
        return TrailingRowsSkipped(f"{where}: rows {first}..{total - 1} of {total} not computed")
    narrower = narrower_format(got, expected)
    if narrower is not None:
        return PrecisionDowngrade(f"{where}: every value fits {narrower}; computed too narrow")
    return None


def grossly_wrong(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Elements off by more than half the reference's magnitude (or not finite where the
    reference is): values never computed, not rounding."""
    got64, expected64 = got.double(), expected.double()
    off = (got64 - expected64).abs() > 0.5 * expected64.abs() + GROSS_ABSOLUTE
    broken = ~torch.isfinite(got64) & torch.isfinite(expected64)
    return off | broken


def mostly_gross(got: torch.Tensor, expected: torch.Tensor, bad: torch.Tensor) -> bool:
    """Whether most wrong elements are grossly wrong: a failure no other draw would pass."""
    count = int(bad.sum())
    return count > 0 and int((bad & grossly_wrong(got, expected)).sum()) * 2 > count


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
