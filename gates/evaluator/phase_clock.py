"""Wall time of each step of an evaluation, so a slow one shows where its seconds went."""

import time


class PhaseClock:
    """Seconds between successive `lap` calls, by step name (rounded to milliseconds)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(now - self._last, 3)
        self._last = now
