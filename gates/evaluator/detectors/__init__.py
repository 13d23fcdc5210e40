"""Cheat detectors: one module per family, one typed exception per known cheat.

Each exception's docstring describes the cheat it stands for; raising one rejects the
candidate with the detector's name and a one-line reason.
"""

from gates.evaluator.protocol import Finding


class CheatDetected(Exception):
    """Base of every cheat; `detector` is the family module's short name."""

    detector = "cheat"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def finding(self) -> Finding:
        return Finding(detector=self.detector, cheat=type(self).__name__, reason=self.reason)
