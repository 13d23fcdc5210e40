"""Whether a process still runs, for the tests that check a worker's processes ended."""

import time
from pathlib import Path


def running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (waiting a moment for a kill to land)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            return False
        if state == "Z":
            return False
        time.sleep(0.1)
    return True
