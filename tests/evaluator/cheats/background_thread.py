"""Cheat: keep a background thread running to do work outside the measured call."""

import threading
import time

from .rms_kernel import honest

_stop = threading.Event()


def _worker():
    while not _stop.is_set():
        time.sleep(0.01)


_thread = threading.Thread(target=_worker, daemon=True)
_thread.start()


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)
