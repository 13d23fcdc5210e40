"""Skipping part of the work in batched calls (computing some rows and copying or leaving
the rest)."""

from gates.evaluator.detectors import CheatDetected


class RowsCopiedAcrossBatch(CheatDetected):
    """Output rows are byte copies of other rows although their inputs differ: one item's
    result was broadcast to the rest of the batch."""


class TrailingRowsSkipped(CheatDetected):
    """The trailing rows of a batched output were never written (the grid covered only part
    of the batch)."""
