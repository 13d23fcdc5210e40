"""The OS-level thread check sees a thread the Python-level one does not name."""

import threading

import pytest

from gates.evaluator.detectors.concurrency import (
    ExtraThreads,
    check_threads,
    os_threads,
    thread_snapshot,
)


def test_a_new_native_thread_is_seen_and_known_ones_are_not():
    python_before, main_name = thread_snapshot()
    os_before = os_threads()
    check_threads(python_before, os_before, main_name)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        # its Python ident counts as known: only its OS thread (named like the main one) is new
        with pytest.raises(ExtraThreads, match="native"):
            check_threads(python_before | {thread.ident}, os_before, main_name)
    finally:
        stop.set()
        thread.join()
    check_threads(python_before, os_before, main_name)
