"""SIGINT and SIGTERM stop a run cleanly: the engine records `interrupted` and exits 130."""

import contextlib
import signal
from collections.abc import Iterator

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunInterrupted(BaseException):
    """Raised in the main thread when a stop signal arrives (a BaseException, like Ctrl-C)."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """Turn SIGINT/SIGTERM into RunInterrupted for the block, then restore the old handlers."""

    def _raise(number, _frame):
        raise RunInterrupted(signal.Signals(number).name)

    previous = {number: signal.signal(number, _raise) for number in HANDLED_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ignore stop signals while the interruption itself is being recorded."""
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in HANDLED_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
