"""Caching or replaying outputs instead of computing them for the inputs at hand.

Every call gets fresh inputs with new values; an output that aliases an earlier output,
an input, or equals the output of a call with different inputs is replay.
"""

from gates.evaluator.detectors import CheatDetected


class OutputReplayed(CheatDetected):
    """An output carried the values of an earlier call with different inputs (memoised by
    pointer, shape or call count)."""


class OutputMemoryReused(CheatDetected):
    """An output shares memory with an output returned earlier that is still alive (a kept
    buffer handed out again)."""


class OutputAliasesInput(CheatDetected):
    """An output shares memory with an input, so the operator is not out-of-place."""


class TimedOutputWrong(CheatDetected):
    """An output produced inside the timing loop differs from the verified output for the
    same inputs: the work was skipped or replayed while being timed."""
