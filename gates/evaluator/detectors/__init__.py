"""Cheat detectors: one module per family, one typed exception per known cheat.

Each exception's docstring describes the cheat it stands for; raising one rejects the
candidate with its family's name (from the detector table, `table.py`) and a one-line reason.
"""

from gates.evaluator.protocol import Finding


class CheatDetected(Exception):
    """Base of every cheat; `detector` is its family in the detector table (`table.py`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def detector(self) -> str:
        from gates.evaluator.detectors.table import family_of

        return family_of(type(self))

    def finding(self) -> Finding:
        return Finding(detector=self.detector, cheat=type(self).__name__, reason=self.reason)
