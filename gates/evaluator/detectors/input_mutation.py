"""Writing to the inputs (in-place scratch use, or planting results for later calls)."""

from gates.evaluator.detectors import CheatDetected


class InputMutated(CheatDetected):
    """An input's bytes after the call differ from the bytes it was given."""
