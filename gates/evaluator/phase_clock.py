"""Wall time of each step of an evaluation, so a slow one shows where its seconds went."""

import time


class PhaseClock:
    """Seconds between successive `lap` calls, by step name (rounded to milliseconds); a
    step lapped again (one per case) adds up."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(self.laps.get(name, 0.0) + now - self._last, 3)
        self._last = now
