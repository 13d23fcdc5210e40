"""Cheat detectors: one module per family, one typed exception per known cheat.

Each exception's docstring describes the cheat it stands for; raising one rejects the
candidate with its family's name (from the detector table, `table.py`: `finding_of(cheat)`)
and a one-line reason.
"""


class CheatDetected(Exception):
    """Base of every cheat; its family, and so its finding, comes from the table (`table.py`),
    which imports every detector module, so the base class cannot ask it without a circle."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
