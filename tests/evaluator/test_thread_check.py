"""The OS-level thread check sees a thread the Python-level one does not name.

It runs in a fresh interpreter: the test process may hold threads of other libraries (Ray's
client, started by earlier tests, grows its pools at any time), which would be new to the
check for reasons of their own."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = """
import threading
import time

from gates.evaluator.detectors.concurrency import (
    ExtraThreads,
    check_threads,
    os_threads,
    thread_snapshot,
)

python_before, main_name = thread_snapshot()
os_before = os_threads()
check_threads(python_before, os_before, main_name)
print("quiet before")
stop = threading.Event()
thread = threading.Thread(target=stop.wait)
thread.start()
try:
    # its Python ident counts as known: only its OS thread (named like the main one) is new
    check_threads(python_before | {thread.ident}, os_before, main_name)
    print("native thread missed")
except ExtraThreads as error:
    print("seen:", error)
finally:
    stop.set()
    thread.join()
# join returns once Python is done with the thread; its OS thread may take a moment to go
deadline = time.monotonic() + 5
while set(os_threads()) - set(os_before) and time.monotonic() < deadline:
    time.sleep(0.01)
check_threads(python_before, os_before, main_name)
print("quiet after")
"""


def test_a_new_native_thread_is_seen_and_known_ones_are_not():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "quiet before" and lines[-1] == "quiet after", result.stdout
    assert lines[1].startswith("seen: ") and "native" in lines[1], result.stdout
